// Package redislua holds the Lua scripts of the Redis backend.
//
// Each script touches one record: its key (KEYS[1]) and, for the scripts
// that keep, return or drop its checkpoints, the key of its checkpoints
// (KEYS[2], the record's key followed by ":steps"), which shares its
// Cluster hash tag. When a script notifies, it publishes on a channel
// named like the record's key. So each is single-slot on a Redis Cluster.
// None reads the clock: times are offsets from the key's expiry, read
// with PTTL (see record.lua). A script that moves a record's expiry gives
// its checkpoints that very expiry as an absolute time (PEXPIREAT the
// record's PEXPIRETIME, or SET PXAT it for an expiry under a second: see
// record.lua's keep_steps), never a PX of their own: Redis 7.0 freezes a
// script's time only to decide which keys have expired, and each PTTL, SET
// PX and PEXPIRE of the script reads the clock anew.
//
// Every script but Complete and Checkpoint starts with the prelude
// record.lua, the one definition of the record layout and of the
// fingerprint rules on the server side. Complete, which runs on every
// first execution, and Checkpoint, which runs on every step, read the
// record by the fixed offsets record.lua documents and carry no prelude
// (defining the prelude's functions costs every run).
package redislua

import _ "embed"

//go:embed record.lua
var prelude string

var (
	//go:embed claim.lua
	claim string
	//go:embed complete.lua
	complete string
	//go:embed renew.lua
	renew string
	//go:embed release.lua
	release string
	//go:embed resolve.lua
	resolve string
	//go:embed get.lua
	get string
	//go:embed delete.lua
	del string
	//go:embed hold.lua
	hold string
	//go:embed leaseheld.lua
	leaseHeld string
	//go:embed checkpoint.lua
	checkpoint string
)

// The scripts, one per store operation, each (but Complete and
// Checkpoint) the prelude followed by its body.
var (
	Claim    = prelude + claim
	Complete = complete
	Renew    = prelude + renew
	Release  = prelude + release
	Resolve  = prelude + resolve
	Get      = prelude + get
	Delete   = prelude + del
	// Hold and LeaseHeld implement backends.Store.Hold and LeaseHeld.
	Hold      = prelude + hold
	LeaseHeld = prelude + leaseHeld
	// Checkpoint implements backends.Store.Checkpoint.
	Checkpoint = checkpoint
)

// Prelude is record.lua alone, for tests of the layout.
var Prelude = prelude

// Package redislua holds the Lua scripts of the Redis backend.
//
// Each script touches exactly one key (KEYS[1]) and, when it notifies,
// publishes on a channel named like that key, so each is single-slot on a
// Redis Cluster. None reads the clock: times are offsets from the key's
// expiry, read with PTTL (see record.lua), and Redis freezes the time a
// script sees for its whole run, so a PTTL and a later SET PX agree.
//
// Every script but Complete starts with the prelude record.lua, the one
// definition of the record layout and of the fingerprint rules on the
// server side. Complete, which runs on every first execution, reads the
// record by the fixed offsets record.lua documents and carries no
// prelude (defining the prelude's functions costs every run).
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
)

// The scripts, one per store operation, each the prelude followed by its
// body.
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
)

// Prelude is record.lua alone, for tests of the layout.
var Prelude = prelude

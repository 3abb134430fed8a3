// Package redislua holds the Lua scripts of the Redis backend. They live
// here, not in backends/redisstore, so that the benchmark's raw-driver
// baseline (bench/) sends the very same scripts without the library.
//
// Each script touches exactly one key (KEYS[1]) and, when it notifies,
// publishes on a channel named like that key, so each is single-slot on a
// Redis Cluster. They read the time with TIME, which Redis (5 and later,
// effects replication) allows before a write.
//
// Every script starts with the prelude record.lua, the one definition of
// the record layout and of the fingerprint rules on the server side.
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
	Complete = prelude + complete
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

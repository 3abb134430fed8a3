// Package redislua holds the Lua scripts of the Redis backend. They live
// here, not in backends/redisstore, so that the benchmark's raw-driver
// baseline (bench/) sends the very same scripts without the library.
//
// Each script touches exactly one key (KEYS[1]) and, when it notifies,
// publishes on a channel named like that key, so each is single-slot on a
// Redis Cluster. They read the time with TIME, which Redis (5 and later,
// effects replication) allows before a write.
package redislua

import _ "embed"

// The scripts, one per store operation.
var (
	//go:embed claim.lua
	Claim string
	//go:embed complete.lua
	Complete string
	//go:embed renew.lua
	Renew string
	//go:embed release.lua
	Release string
	//go:embed resolve.lua
	Resolve string
	//go:embed get.lua
	Get string
	//go:embed delete.lua
	Delete string
)

package redisstore

import (
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/internal/redislua"
)

// The Lua scripts, from internal/redislua. claim.lua is the claim's slow
// path only (takeovers; see Claim).
var (
	// redis.Script.Run sends EVALSHA and falls back to EVAL when the
	// server's script cache lacks the script (NOSCRIPT: a restart, a
	// failover to a replica, SCRIPT FLUSH), which also reloads it.
	claimScript      = redis.NewScript(redislua.Claim)
	completeScript   = redis.NewScript(redislua.Complete)
	renewScript      = redis.NewScript(redislua.Renew)
	releaseScript    = redis.NewScript(redislua.Release)
	resolveScript    = redis.NewScript(redislua.Resolve)
	checkpointScript = redis.NewScript(redislua.Checkpoint)

	allScripts = []*redis.Script{claimScript, completeScript, renewScript, releaseScript, resolveScript, holdScript, checkpointScript}
)

package redisstore

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts. Each touches exactly one key (KEYS[1]) and, when it
// notifies, publishes on a channel named like that key, so each is
// single-slot on a Redis Cluster. They read the time with TIME, which Redis
// (5 and later, effects replication) allows before a write.
var (
	//go:embed lua/claim.lua
	claimLua string
	//go:embed lua/complete.lua
	completeLua string
	//go:embed lua/renew.lua
	renewLua string
	//go:embed lua/release.lua
	releaseLua string
	//go:embed lua/resolve.lua
	resolveLua string

	// redis.Script.Run sends EVALSHA and falls back to EVAL when the
	// server's script cache lacks the script (NOSCRIPT: a restart, a
	// failover to a replica, SCRIPT FLUSH), which also reloads it.
	claimScript    = redis.NewScript(claimLua)
	completeScript = redis.NewScript(completeLua)
	renewScript    = redis.NewScript(renewLua)
	releaseScript  = redis.NewScript(releaseLua)
	resolveScript  = redis.NewScript(resolveLua)

	allScripts = []*redis.Script{claimScript, completeScript, renewScript, releaseScript, resolveScript}
)

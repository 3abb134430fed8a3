package redisstore

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// UnsupportedClientError reports a client New refuses because the store
// could not keep its guarantee through it. The one such client is a
// *redis.Ring: it hashes each key over the shards it deems healthy, so a
// shard that fails a health check, or a change of the shard set, moves
// keys to other shards, where their records are not, and a retry of a key
// whose record is on the shard left out claims it again and runs the
// effect twice. Use one server (with Sentinel for failover) or a Redis
// Cluster, whose slots move only with their data.
type UnsupportedClientError struct {
	// Client is the Go type of the client New was given, e.g. "*redis.Ring".
	Client string
	// Reason says why the store refuses it.
	Reason string
}

// Error implements error.
func (e *UnsupportedClientError) Error() string {
	return fmt.Sprintf("once/redisstore: a %s is not supported: %s", e.Client, e.Reason)
}

// checkClient refuses a client New does not support (see
// UnsupportedClientError), before any command is sent.
func checkClient(client redis.UniversalClient) error {
	switch client.(type) {
	case nil:
		return &UnsupportedClientError{Client: "nil client", Reason: "New needs a *redis.Client, a Sentinel failover client or a *redis.ClusterClient"}
	case *redis.Ring:
		return &UnsupportedClientError{Client: "*redis.Ring", Reason: "it moves keys to other shards when a shard fails its health check or the shards change, and a key whose record is on the shard left out runs again; use one server (with Sentinel for failover) or a Redis Cluster"}
	}
	return nil
}

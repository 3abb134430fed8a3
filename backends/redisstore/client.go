package redisstore

import (
	"fmt"
	"reflect"

	"github.com/redis/go-redis/v9"
)

// UnsupportedClientError reports a client New refuses, before sending
// anything: a nil client (a nil interface, or a nil pointer or other nil
// value of any client type, such as a nil *redis.Client), a *redis.Client
// or *redis.ClusterClient that no constructor made (a zero value), and a
// *redis.Ring, through which the store could not keep its guarantee: a
// Ring hashes each key over the shards it deems healthy, so a shard that
// fails a health check, or a change of the shard set, moves keys to other
// shards, where their records are not, and a retry of a key whose record
// is on the shard left out claims it again and runs the effect twice. Use
// one server (with Sentinel for failover) or a Redis Cluster, whose slots
// move only with their data. A client of the caller's own type that wraps
// a nil or zero go-redis client is refused too, when its first command
// panics (Reason says so); New sends that command, so this one is refused
// after the attempt rather than before.
type UnsupportedClientError struct {
	// Client is the client New was given: its Go type, e.g.
	// "*redis.Ring"; "nil client" for a nil interface; "nil " and the
	// type for a nil value of a type, e.g. "nil *redis.Client"; "zero
	// " and the type for a zero value, e.g. "zero *redis.Client".
	Client string
	// Reason says why the store refuses it.
	Reason string
}

// Error implements error.
func (e *UnsupportedClientError) Error() string {
	return fmt.Sprintf("once/redisstore: a %s is not supported: %s", e.Client, e.Reason)
}

// needs is the Reason of a client that is not one at all.
const needs = "New needs a client made by redis.NewClient, redis.NewFailoverClient or redis.NewClusterClient"

// checkClient refuses a client New does not support (see
// UnsupportedClientError), before any command is sent: a nil or zero one,
// on which New would panic, or a *redis.Ring.
func checkClient(client redis.UniversalClient) error {
	if client == nil {
		return &UnsupportedClientError{Client: "nil client", Reason: needs}
	}
	if isNil(client) {
		return &UnsupportedClientError{Client: fmt.Sprintf("nil %T", client), Reason: needs}
	}
	switch client.(type) {
	case *redis.Client, *redis.ClusterClient:
		// Their fields are unexported: a zero one was not made by a
		// constructor, and New's first call on it would panic.
		if reflect.ValueOf(client).Elem().IsZero() {
			return &UnsupportedClientError{Client: fmt.Sprintf("zero %T", client), Reason: needs}
		}
	case *redis.Ring:
		return &UnsupportedClientError{Client: "*redis.Ring", Reason: "it moves keys to other shards when a shard fails its health check or the shards change, and a key whose record is on the shard left out runs again; use one server (with Sentinel for failover) or a Redis Cluster"}
	}
	return nil
}

// isNil reports whether v holds a nil value of a type that has one (a nil
// pointer, map, channel, function or slice). New is not a hot path: the
// reflection costs nothing that matters.
func isNil(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Chan, reflect.Func, reflect.Map, reflect.Pointer, reflect.Slice, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

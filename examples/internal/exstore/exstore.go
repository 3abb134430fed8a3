// Package exstore opens the once store an example runs on: the embedded
// memory store by default, PostgreSQL or Redis when the example is run with
// -store postgres or -store redis.
//
// The choice is explicit: ONCE_POSTGRES_URL and ONCE_REDIS_ADDR only give
// the defaults of the -postgres and -redis flags, they never switch an
// example to a server by themselves (the test script exports them for the
// library's own tests).
package exstore

import (
	"flag"
	"fmt"

	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// Kinds of store.
const (
	Memory   = "memory"
	Postgres = "postgres"
	Redis    = "redis"
)

// Defaults of the -postgres and -redis flags when ONCE_POSTGRES_URL and
// ONCE_REDIS_ADDR are unset.
const (
	DefaultPostgresURL = serverenv.DefaultPostgresURL
	DefaultRedisAddr   = serverenv.DefaultRedisAddr
)

// Schema is the PostgreSQL schema of every example's tables.
const Schema = "once_examples"

// Config says which store to open and where.
type Config struct {
	// Kind is Memory (the zero value), Postgres or Redis.
	Kind string
	// PostgresURL is the pgx connection string of -store postgres.
	PostgresURL string
	// RedisAddr is the host:port of -store redis.
	RedisAddr string
	// Name is the table (PostgreSQL, in schema once_examples) or the key
	// prefix (Redis) of the records, so that runs do not see each other's
	// keys. Letters, digits and underscores; see Unique.
	Name string
	// Drop makes the close function delete the table or the keys. Examples
	// set it: a demo run leaves nothing behind.
	Drop bool
}

// Defaults returns a Config of kind with the server addresses from the
// environment or the local defaults.
func Defaults(kind string) Config {
	return Config{Kind: kind, PostgresURL: serverenv.PostgresURL(), RedisAddr: serverenv.RedisAddr()}
}

// RegisterFlags registers -store, -postgres and -redis on fs, filling a
// Config whose kind defaults to kind.
func RegisterFlags(fs *flag.FlagSet, kind string) *Config {
	c := Defaults(kind)
	fs.StringVar(&c.Kind, "store", c.Kind, "store of the idempotency records: memory, postgres or redis")
	fs.StringVar(&c.PostgresURL, "postgres", c.PostgresURL, "PostgreSQL URL for -store postgres (default from ONCE_POSTGRES_URL)")
	fs.StringVar(&c.RedisAddr, "redis", c.RedisAddr, "Redis address for -store redis (default from ONCE_REDIS_ADDR)")
	return &c
}

// Durable reports whether the store outlives the process and is shared by
// every process that opens it: a restart keeps the keys.
func (c Config) Durable() bool { return c.Kind == Postgres || c.Kind == Redis }

// String describes where the records live, for an example's first line.
func (c Config) String() string {
	switch c.Kind {
	case Postgres:
		return fmt.Sprintf("postgres (table %s.%s)", Schema, c.Name)
	case Redis:
		return fmt.Sprintf("redis %s (keys %s*)", c.RedisAddr, c.Prefix())
	default:
		return "memory (this process only)"
	}
}

// Prefix is the Redis key prefix of the records.
func (c Config) Prefix() string { return "once:ex:" + c.Name + ":" }

// Package exstore opens the once store an example runs on: the embedded
// memory store by default, PostgreSQL, Redis, SQLite or MariaDB/MySQL when
// the example is run with -store postgres, redis, sqlite or mysql.
//
// The choice is explicit: ONCE_POSTGRES_URL, ONCE_REDIS_ADDR and
// ONCE_MYSQL_DSN only give the defaults of the -postgres, -redis and -mysql
// flags, they never switch an example to a server by themselves (the test
// script exports them for the library's own tests).
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
	SQLite   = "sqlite"
	MySQL    = "mysql"
)

// Kinds lists every kind of store, memory first.
var Kinds = []string{Memory, Postgres, Redis, SQLite, MySQL}

// Defaults of the -postgres and -redis flags when ONCE_POSTGRES_URL and
// ONCE_REDIS_ADDR are unset.
const (
	DefaultPostgresURL = serverenv.DefaultPostgresURL
	DefaultRedisAddr   = serverenv.DefaultRedisAddr
	DefaultMySQLDSN    = serverenv.DefaultMySQLDSN
)

// Schema is the PostgreSQL schema of every example's tables.
const Schema = "once_examples"

// Config says which store to open and where.
type Config struct {
	// Kind is Memory (the zero value), Postgres, Redis, SQLite or MySQL.
	Kind string
	// PostgresURL is the pgx connection string of -store postgres.
	PostgresURL string
	// RedisAddr is the host:port of -store redis.
	RedisAddr string
	// MySQLDSN is the go-sql-driver data source name of -store mysql.
	MySQLDSN string
	// SQLitePath is the database file of -store sqlite; empty means a file
	// named after Name in the system's temporary directory.
	SQLitePath string
	// Name is the table (PostgreSQL, in schema once_examples; MariaDB/MySQL,
	// in the DSN's database; SQLite) or the key prefix (Redis) of the
	// records, so that runs do not see each other's keys. Letters, digits
	// and underscores; see Unique.
	Name string
	// Drop makes the close function delete the table (with its
	// procedures on MariaDB/MySQL), the keys, or the SQLite file Open
	// chose itself. Examples set it: a demo run leaves nothing behind.
	Drop bool
}

// Defaults returns a Config of kind with the server addresses from the
// environment or the local defaults.
func Defaults(kind string) Config {
	return Config{Kind: kind, PostgresURL: serverenv.PostgresURL(), RedisAddr: serverenv.RedisAddr(), MySQLDSN: serverenv.MySQLDSN()}
}

// RegisterFlags registers -store, -postgres, -redis, -mysql and -sqlite on
// fs, filling a Config whose kind defaults to kind.
func RegisterFlags(fs *flag.FlagSet, kind string) *Config {
	c := Defaults(kind)
	fs.StringVar(&c.Kind, "store", c.Kind, "store of the idempotency records: memory, postgres, redis, sqlite or mysql")
	fs.StringVar(&c.PostgresURL, "postgres", c.PostgresURL, "PostgreSQL URL for -store postgres (default from ONCE_POSTGRES_URL)")
	fs.StringVar(&c.RedisAddr, "redis", c.RedisAddr, "Redis address for -store redis (default from ONCE_REDIS_ADDR)")
	fs.StringVar(&c.MySQLDSN, "mysql", c.MySQLDSN, "MariaDB/MySQL DSN for -store mysql (default from ONCE_MYSQL_DSN)")
	fs.StringVar(&c.SQLitePath, "sqlite", c.SQLitePath, "database file for -store sqlite (default: a fresh file in the temporary directory, deleted at the end)")
	return &c
}

// Durable reports whether the store outlives the process and is shared by
// every process that opens it: a restart keeps the keys.
func (c Config) Durable() bool { return c.Kind != Memory && c.Kind != "" }

// String describes where the records live, for an example's first line.
func (c Config) String() string {
	switch c.Kind {
	case Postgres:
		return fmt.Sprintf("postgres (table %s.%s)", Schema, c.Name)
	case Redis:
		return fmt.Sprintf("redis %s (keys %s*)", c.RedisAddr, c.Prefix())
	case SQLite:
		return fmt.Sprintf("sqlite %s (table %s)", c.sqlitePath(), c.Name)
	case MySQL:
		return fmt.Sprintf("mysql (table %s)", c.Name)
	default:
		return "memory (this process only)"
	}
}

// Prefix is the Redis key prefix of the records.
func (c Config) Prefix() string { return "once:ex:" + c.Name + ":" }

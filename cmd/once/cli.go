package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// cli is the command line: global flags, then one subcommand.
type cli struct {
	Postgres     string        `placeholder:"URL" help:"PostgreSQL connection URL (default: $ONCE_POSTGRES_URL when no other store flag is given)."`
	MySQL        string        `name:"mysql" placeholder:"DSN" help:"MariaDB/MySQL DSN: user:password@tcp(host:port)/db."`
	SQLite       string        `name:"sqlite" placeholder:"FILE" help:"SQLite database file."`
	Schema       string        `default:"public" help:"PostgreSQL schema of the records table."`
	Table        string        `default:"once_records" help:"Records table (PostgreSQL, MariaDB/MySQL, SQLite)."`
	Redis        string        `placeholder:"ADDR" help:"Redis node: host:port, or a redis:// (rediss:// for TLS) URL with user, password and db."`
	RedisCluster []string      `name:"redis-cluster" sep:"," placeholder:"ADDRS" help:"Comma-separated seed addresses of a Redis Cluster."`
	Prefix       string        `default:"once:" help:"Redis key prefix of the records."`
	JSON         bool          `name:"json" help:"Print machine-readable JSON instead of text."`
	Timeout      time.Duration `default:"30s" help:"Time limit of the command (not of sweep --loop as a whole); 0: none."`

	Migrate migrateCmd `cmd:"" help:"Create or upgrade the records table (PostgreSQL, MariaDB/MySQL, SQLite)."`
	Sweep   sweepCmd   `cmd:"" help:"Delete expired rows of a SQL store in batches, once or in a loop."`
	Get     getCmd     `cmd:"" help:"Show the record of a key: state, fingerprint, lease, expiry, outcome."`
	Delete  deleteCmd  `cmd:"" help:"Delete the record of a key so the next call is a new intent."`
	Resolve resolveCmd `cmd:"" help:"Store the outcome of a held or unrecorded key (once.Resolve)."`
	Check   checkCmd   `cmd:"" help:"Check the store: Redis eviction policy, PostgreSQL connectivity and migration."`
	List    listCmd    `cmd:"" help:"List records (pending and held by default, --state for others): state, age, lease, hold, held error."`
	Stats   statsCmd   `cmd:"" help:"Count records by state, with the oldest pending and held, and the store's size."`

	// given holds the names of the flags on the command line (an empty
	// value included), as kong reports them.
	given map[string]bool
	// sweepBatch is sweep's --batch, for the store's Config (0: the
	// store's default).
	sweepBatch int
	// createFile lets a SQLite file be created (migrate).
	createFile bool
}

// env is what every command's Run receives.
type env struct {
	ctx            context.Context
	stdout, stderr io.Writer
	cli            *cli
}

// bounded returns the command's context, limited by --timeout.
func (e *env) bounded() (context.Context, context.CancelFunc) {
	if e.cli.Timeout <= 0 {
		return context.WithCancel(e.ctx)
	}
	return context.WithTimeout(e.ctx, e.cli.Timeout)
}

// emit prints v as one line of JSON with --json, or the text lines
// otherwise.
func (e *env) emit(v any, text ...string) error {
	if e.cli.JSON {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	}
	for _, line := range text {
		if _, err := fmt.Fprintln(e.stdout, line); err != nil {
			return err
		}
	}
	return nil
}

// emitLines prints each of vs as one line of JSON (JSON Lines).
func (e *env) emitLines(vs []listedView) error {
	for _, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(e.stdout, "%s\n", b); err != nil {
			return err
		}
	}
	return nil
}

// Command once is the operator's tool for the records of
// github.com/stagedoor/once in PostgreSQL, MariaDB/MySQL, SQLite or Redis:
// migrate the table, sweep expired rows, inspect, delete or resolve one
// key, and check the store's configuration.
//
// Exit status: 0 on success, 1 when the command failed (the store was
// unreachable, the key was already completed, a check found a problem), 2
// for a usage error (bad or empty flags, arguments, scope or key, a missing
// --yes). See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

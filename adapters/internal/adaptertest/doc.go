// Package adaptertest is the shared test harness of the broker adapters:
// a fleet of worker processes (the test binary re-executed) that a test
// kills with SIGKILL and restarts, and a PostgreSQL ledger of side effects
// that shows how many times each message's effect happened.
package adaptertest

package faults

import (
	"fmt"
	"strings"
	"time"
)

// failoverRow is one replication mode's line in the failover results.
type failoverRow struct {
	Replication     string
	Keys, Calls     int
	AckedBeforeKill int
	V               verdict
	Errors          map[string]int
	// Writable is the time from the kill to the promoted standby
	// accepting writes.
	Writable, Took time.Duration
}

const failoverHeader = "| replication | keys | calls | answered before the kill | acknowledged outcomes lost | keys whose fn ran twice (after Do reported it) | stuck keys | kill → standby writable | Do errors seen (retried) | time |\n" +
	"|---|---|---|---|---|---|---|---|---|---|\n"

func (r failoverRow) line() string {
	return fmt.Sprintf("| %s | %d | %d | %d | %d | %d (%d) | %d | %.2fs | %s | %.1fs |\n",
		r.Replication, r.Keys, r.Calls, r.AckedBeforeKill, r.V.Lost, r.V.DupKeys, len(r.V.AllowedDups),
		r.V.Stuck, r.Writable.Seconds(), orNone(kindsOf(r.Errors)), r.Took.Seconds())
}

func (r failoverRow) String() string { return failoverHeader + r.line() }

func (c *collector) addFailover(r failoverRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failovers = append(c.failovers, r)
}

// failoverMarkdown is the results section of TestPostgresFailover.
func failoverMarkdown(rows []failoverRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	prof := currentProfile()
	fmt.Fprintf(&b, "\n## PostgreSQL failover\n\n"+
		"`TestPostgresFailover` starts its own PostgreSQL primary and a streaming standby (initdb, `pg_basebackup -R`; fsync off, as only processes die, "+
		"and the standby's `wal_retrieve_retry_interval` 100 ms) on loopback, the standby's replication connection delayed %v by a proxy. "+
		"%d goroutines call `Do` (lease %v) twice per key (a request and its duplicate, together), fn appending to an in-process ledger, "+
		"through one pool on both servers with `target_session_attrs=read-write`. "+
		"A third of the way through, the replication link is cut and the primary killed (SIGKILL to the postmaster and all its processes), "+
		"the standby promoted (`pg_ctl promote`, then polled until `pg_is_in_recovery()` is false), and the clients go on against it. "+
		"Past lease + slack (%v) on the new primary's clock each key is called once more: an acknowledged outcome is lost when that call does not replay it. "+
		"A second run of fn is allowed only after `Do` returned `ErrOutcomeUnrecorded` or `ErrLeaseLost` for the key. "+
		"Asynchronous losses are counted; with a synchronous standby any loss, and in any mode a stuck key, fails the test.\n\n"+
		"```\ngo test -race -count=1 -run TestPostgresFailover -v ./faults/\n```\n\n", failoverLinkDelay, failoverClients, prof.Lease, prof.Slack)
	b.WriteString(failoverHeader)
	for _, r := range rows {
		b.WriteString(r.line())
	}
	return b.String()
}

package mysqlstore

import (
	"strconv"
	"strings"
)

// maxDatetime is DATETIME(6)'s largest value: a deadline past it saturates
// there.
const maxDatetime = `'9999-12-31 23:59:59.999999'`

// The SQL of every operation, with the placeholder table name `once_records`
// replaced by the configured one. Each fenced write bumps revision, so that
// an UPDATE that matches its row always changes it.
const (
	// claimSQL and resolveSQL: scope, key, fingerprint, owner, then lease
	// µs (claim) or outcome (resolve), retention µs, lock wait s, and
	// (resolve) OnlyLeased. They call migration 001's
	// procedure. A procedure never changes under its name (see
	// CONTRIBUTING.md): a change is a new name in a new migration.
	claimSQL   = "CALL `once_records_call_v1`(1, ?, ?, ?, ?, NULL, ?, ?, ?, FALSE)"
	resolveSQL = "CALL `once_records_call_v1`(2, ?, ?, ?, ?, ?, 0, ?, ?, ?)"

	// completeSQL: retention µs, outcome, scope, key, owner. Assignments
	// read only parameters and the server's clock, never a column assigned
	// before them, so they mean the same with MariaDB's
	// SIMULTANEOUS_ASSIGNMENT sql_mode or without.
	completeSQL = "UPDATE `once_records` SET\n" +
		"\tcompleted_at = UTC_TIMESTAMP(6),\n" +
		"\texpires_at = COALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + "),\n" +
		"\tlease_until = NULL, outcome = ?, revision = revision + 1, state = 2\n" +
		"WHERE scope = ? AND `key` = ? AND owner = ? AND state = 1 AND expires_at > UTC_TIMESTAMP(6)"

	// completedBySQL: scope, key, owner, outcome. It tells a repeated
	// Complete (the reply of the first was lost) from a lost claim.
	completedBySQL = "SELECT 1 FROM `once_records`\n" +
		"WHERE scope = ? AND `key` = ? AND owner = ? AND state = 2 AND outcome = ? AND expires_at > UTC_TIMESTAMP(6)"

	// renewSQL: lease µs, lease µs, scope, key, owner. The record's expiry
	// never falls before the new lease end.
	renewSQL = "UPDATE `once_records` SET\n" +
		"\tlease_until = COALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + "),\n" +
		"\texpires_at = GREATEST(expires_at, COALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + ")),\n" +
		"\trevision = revision + 1\n" +
		"WHERE scope = ? AND `key` = ? AND state = 1 AND owner = ? AND expires_at > UTC_TIMESTAMP(6)"

	// checkpointSQL: steps (NULL for none), scope, key, owner. The fence
	// of completeSQL and renewSQL; it changes nothing but the checkpoints
	// (and revision, so that a re-send still changes its row).
	checkpointSQL = "UPDATE `once_records` SET steps = ?, revision = revision + 1\n" +
		"WHERE scope = ? AND `key` = ? AND state = 1 AND owner = ? AND expires_at > UTC_TIMESTAMP(6)"

	// releaseSQL: scope, key, owner. It deletes a record without
	// checkpoints.
	releaseSQL = "DELETE FROM `once_records`\n" +
		"WHERE scope = ? AND `key` = ? AND state = 1 AND owner = ? AND expires_at > UTC_TIMESTAMP(6)\n" +
		"\tAND steps IS NULL"

	// endLeaseSQL: scope, key, owner. releaseSQL's fence, for a record
	// with checkpoints: it is kept, its lease ended, claimable at once.
	endLeaseSQL = "UPDATE `once_records` SET lease_until = UTC_TIMESTAMP(6), revision = revision + 1\n" +
		"WHERE scope = ? AND `key` = ? AND state = 1 AND owner = ? AND expires_at > UTC_TIMESTAMP(6)\n" +
		"\tAND steps IS NOT NULL"

	// getSQL: scope, key. A consistent read: no row lock, no write. The
	// one read of a record that returns its checkpoints whatever its state.
	getSQL = "SELECT state, fingerprint, outcome,\n" +
		"\tCOALESCE(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), lease_until), 0), steps,\n" +
		"\t" + detailColumns + "\n" +
		"FROM `once_records` WHERE scope = ? AND `key` = ? AND expires_at > UTC_TIMESTAMP(6)"

	// deleteSQL: scope, key. Deletes the live record whatever its owner.
	deleteSQL = "DELETE FROM `once_records` WHERE scope = ? AND `key` = ? AND expires_at > UTC_TIMESTAMP(6)"

	// sweepSQL: batch size. Along the index on (state, expires_at): the
	// expired part of each state's range, oldest expiries first.
	sweepSQL = "DELETE FROM `once_records` WHERE state IN (1, 2, 3) AND expires_at < UTC_TIMESTAMP(6)\n" +
		"ORDER BY state, expires_at LIMIT ?"
)

// detailColumns are the columns every read of a record adds after its
// lease, all on the server's clock: its time left before it expires
// (a completed record's ExpiresIn), its age (a pending record's
// since its claim, a held one's since its hold; zero when completed), a
// held record's hold left, and the held error's code and message.
const detailColumns = "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at),\n" +
	"\tCASE state WHEN 1 THEN TIMESTAMPDIFF(MICROSECOND, created_at, UTC_TIMESTAMP(6))\n" +
	"\t\tWHEN 3 THEN TIMESTAMPDIFF(MICROSECOND, held_at, UTC_TIMESTAMP(6)) ELSE 0 END,\n" +
	"\tCOALESCE(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), hold_until), 0), held_code, held_message"

// placeholderTable is the default table name in the SQL above and in the
// embedded migrations; derived names (`once_records_call_v1`, …) start with
// it, so one replacement renames them all.
const placeholderTable = "`once_records"

// statements holds the SQL of every operation, rendered for one table.
type statements struct {
	claim, resolve, complete, completedBy, renew, checkpoint    string
	release, endLease, get, delete, sweep, peek, peekLocked     string
	insertClaim, takeover, hold, heldBy, leaseHeld, list, count string
}

// newStatements renders the SQL for table, every statement that may wait
// for a row lock bounded to lockWaitS seconds (see boundLockWait), the
// locking read peekLocked included. The consistent reads (peek, get,
// completedBy, heldBy, list, count) take no lock and stay as they are.
func newStatements(table string, lockWaitS int64) statements {
	r := strings.NewReplacer(placeholderTable, "`"+table)
	bound := func(query string) string { return boundLockWait(r.Replace(query), lockWaitS) }
	return statements{
		claim:       bound(claimSQL),
		resolve:     bound(resolveSQL),
		complete:    bound(completeSQL),
		completedBy: r.Replace(completedBySQL),
		renew:       bound(renewSQL),
		checkpoint:  bound(checkpointSQL),
		release:     bound(releaseSQL),
		endLease:    bound(endLeaseSQL),
		get:         r.Replace(getSQL),
		peek:        r.Replace(peekSQL),
		peekLocked:  bound(peekLockedSQL),
		insertClaim: bound(insertClaimSQL),
		takeover:    bound(takeoverSQL),
		delete:      bound(deleteSQL),
		sweep:       bound(sweepSQL),
		hold:        bound(holdSQL),
		heldBy:      r.Replace(heldBySQL),
		leaseHeld:   bound(leaseHeldSQL),
		list:        r.Replace(listSQL),
		count:       r.Replace(countSQL),
	}
}

// boundLockWait makes one statement wait at most lockWaitS seconds for a
// row lock, whatever the session's innodb_lock_wait_timeout, without
// changing the session, in one text that both servers accept, so no
// flavour detection (and no round trip) is needed:
//
//   - MariaDB (10.1.2 and later) runs the executable comment
//     /*M!100102 SET STATEMENT innodb_lock_wait_timeout=N FOR */, which
//     MySQL skips as a comment; it covers a whole CALL, every statement of
//     the procedure included.
//   - MySQL (8.0.3 and later) applies the optimizer hint
//     /*+ SET_VAR(innodb_lock_wait_timeout=N) */ placed after the
//     statement's first keyword, which MariaDB skips as a comment. A CALL
//     takes no hint: the procedures bound their own writes with
//     p_lock_wait_s.
//
// Older MySQL servers ignore the hint and wait up to the session's
// innodb_lock_wait_timeout.
func boundLockWait(query string, lockWaitS int64) string {
	n := strconv.FormatInt(lockWaitS, 10)
	verb, rest, _ := strings.Cut(query, " ")
	if verb != "CALL" {
		rest = "/*+ SET_VAR(innodb_lock_wait_timeout=" + n + ") */ " + rest
	}
	return "/*M!100102 SET STATEMENT innodb_lock_wait_timeout=" + n + " FOR */ " + verb + " " + rest
}

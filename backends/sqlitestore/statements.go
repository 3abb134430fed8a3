package sqlitestore

import "strings"

// The SQL of every operation, with the placeholder table name
// "once_records" replaced by the configured one. Times are parameters:
// the process's clock is the store's (see the package doc).
const (
	// readSQL: scope, key. Its last column is NULL: the checkpoints are
	// not read.
	readSQL = "SELECT " + readColumns + ", NULL\n" + readFrom

	// readClaimSQL: scope, key, owner, now. readSQL, with the checkpoints
	// of a row that the claim re-sends (pending, owner's) or may take over
	// (a lapsed lease, an ended hold): a replay or a duplicate in progress
	// does not read them.
	readClaimSQL = "SELECT " + readColumns + `,
	CASE WHEN state = 1 AND (held_at IS NULL AND owner = ?3
		OR lease_until <= ?4 AND (held_at IS NULL OR hold_until <= ?4)) THEN steps END
` + readFrom

	// getSQL: scope, key. readSQL with the checkpoints, whatever the state.
	getSQL = "SELECT " + readColumns + ", steps\n" + readFrom

	readColumns = `state, fingerprint, owner, resolved, lease_until, outcome, expires_at,
	created_at, held_at, hold_until, coalesce(held_code, ''), coalesce(held_message, '')`
	readFrom = `FROM "once_records" WHERE scope = ?1 AND key = ?2`

	// insertSQL: scope, key, fingerprint, state, owner, resolved,
	// lease_until, outcome, now (created and, for state 2, completed),
	// expires_at. It replaces an expired row of the key.
	insertSQL = `INSERT OR REPLACE INTO "once_records"
	(scope, key, fingerprint, state, owner, resolved, lease_until, outcome, created_at, completed_at, expires_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, CASE WHEN ?4 = 2 THEN ?9 END, ?10)`

	// takeoverSQL: fingerprint, owner, lease_until, now, expires_at,
	// scope, key. Run inside the transaction that read the row.
	takeoverSQL = `UPDATE "once_records" SET fingerprint = ?1, state = 1, owner = ?2, resolved = 0,
	lease_until = ?3, outcome = NULL, created_at = ?4, completed_at = NULL, expires_at = ?5,
	held_at = NULL, hold_until = NULL, held_code = NULL, held_message = NULL
WHERE scope = ?6 AND key = ?7`

	// resolvePendingSQL: fingerprint, owner, outcome, now, expires_at,
	// scope, key. Run inside the transaction that read the row.
	resolvePendingSQL = `UPDATE "once_records" SET fingerprint = ?1, state = 2, owner = ?2, resolved = 1,
	lease_until = NULL, outcome = ?3, completed_at = ?4, expires_at = ?5,
	held_at = NULL, hold_until = NULL, held_code = NULL, held_message = NULL
WHERE scope = ?6 AND key = ?7`

	// completeSQL: outcome, now, expires_at, scope, key, owner, now.
	completeSQL = `UPDATE "once_records" SET state = 2, lease_until = NULL, outcome = ?1,
	completed_at = ?2, expires_at = ?3
WHERE scope = ?4 AND key = ?5 AND owner = ?6 AND state = 1 AND held_at IS NULL AND expires_at > ?7`

	// completedBySQL: scope, key, owner, outcome, now. It tells a repeated
	// Complete (the reply of the first was lost) from a lost claim.
	completedBySQL = `SELECT 1 FROM "once_records"
WHERE scope = ? AND key = ? AND owner = ? AND state = 2 AND outcome = ? AND expires_at > ?`

	// renewSQL: lease_until, scope, key, owner, now. The record's expiry
	// never falls before the new lease end.
	renewSQL = `UPDATE "once_records" SET lease_until = ?1, expires_at = max(expires_at, ?1)
WHERE scope = ?2 AND key = ?3 AND state = 1 AND held_at IS NULL AND owner = ?4 AND expires_at > ?5`

	// checkpointSQL: steps (NULL for none), scope, key, owner, now. The
	// fence of completeSQL and renewSQL; it changes nothing but the
	// checkpoints.
	checkpointSQL = `UPDATE "once_records" SET steps = ?1
WHERE scope = ?2 AND key = ?3 AND owner = ?4 AND state = 1 AND held_at IS NULL AND expires_at > ?5`

	// releaseSQL: scope, key, owner, now. It deletes a record without
	// checkpoints.
	releaseSQL = `DELETE FROM "once_records"
WHERE scope = ? AND key = ? AND state = 1 AND held_at IS NULL AND owner = ? AND expires_at > ?
	AND steps IS NULL`

	// endLeaseSQL: scope, key, owner, now. releaseSQL's fence, for a
	// record with checkpoints: it is kept, its lease ended at now,
	// claimable at once.
	endLeaseSQL = `UPDATE "once_records" SET lease_until = ?4
WHERE scope = ?1 AND key = ?2 AND state = 1 AND held_at IS NULL AND owner = ?3 AND expires_at > ?4
	AND steps IS NOT NULL`

	// deleteSQL: scope, key, now. The live record, whatever its owner.
	deleteSQL = `DELETE FROM "once_records" WHERE scope = ? AND key = ? AND expires_at > ?`

	// sweepSQL: now, batch size. Oldest expiries first, along the index.
	// holdSQL: now, hold_until, code, message, expires_at, scope, key,
	// owner. A live pending row of the owner becomes held.
	holdSQL = `UPDATE "once_records" SET held_at = ?1, hold_until = ?2, held_code = ?3, held_message = ?4,
	lease_until = ?1, expires_at = ?5
WHERE scope = ?6 AND key = ?7 AND owner = ?8 AND state = 1 AND held_at IS NULL AND expires_at > ?1`

	// leaseHeldSQL: owner, lease_until, scope, key, now. A live held row
	// whose reconciler lease is not another token's.
	leaseHeldSQL = `UPDATE "once_records" SET owner = ?1, lease_until = ?2, expires_at = max(expires_at, ?2)
WHERE scope = ?3 AND key = ?4 AND state = 1 AND held_at IS NOT NULL AND expires_at > ?5
	AND (lease_until <= ?5 OR owner = ?1)`

	// listPendingSQL and listHeldSQL: cutoff (claimed or held at or
	// before), scope ('' any), key prefix, cursor scope, cursor key, now,
	// limit. Held rows come from the partial index on held_at.
	listPendingSQL = `SELECT scope, key, state, fingerprint, owner, resolved, lease_until, outcome, expires_at,
	created_at, held_at, hold_until, coalesce(held_code, ''), coalesce(held_message, '')
FROM "once_records"
WHERE state = 1 AND held_at IS NULL AND expires_at > ?6 AND created_at <= ?1
	AND (?2 = '' OR scope = ?2) AND substr(key, 1, length(?3)) = ?3 AND (scope, key) > (?4, ?5)
ORDER BY scope, key LIMIT ?7`
	listHeldSQL = `SELECT scope, key, state, fingerprint, owner, resolved, lease_until, outcome, expires_at,
	created_at, held_at, hold_until, coalesce(held_code, ''), coalesce(held_message, '')
FROM "once_records"
WHERE held_at IS NOT NULL AND held_at <= ?1 AND state = 1 AND expires_at > ?6
	AND (?2 = '' OR scope = ?2) AND substr(key, 1, length(?3)) = ?3 AND (scope, key) > (?4, ?5)
ORDER BY scope, key LIMIT ?7`
	// listCompletedSQL: as listPendingSQL, whose cutoff ?1 it leaves out
	// (a completed record's Age is zero), without the outcome.
	listCompletedSQL = `SELECT scope, key, state, fingerprint, owner, resolved, lease_until, NULL, expires_at,
	created_at, held_at, hold_until, coalesce(held_code, ''), coalesce(held_message, '')
FROM "once_records"
WHERE state = 2 AND expires_at > ?6
	AND (?2 = '' OR scope = ?2) AND substr(key, 1, length(?3)) = ?3 AND (scope, key) > (?4, ?5)
ORDER BY scope, key LIMIT ?7`

	// countSQL: now.
	countSQL = `SELECT
	coalesce(sum(state = 1 AND held_at IS NULL AND expires_at > ?1), 0),
	coalesce(sum(held_at IS NOT NULL AND expires_at > ?1), 0),
	coalesce(sum(state = 2 AND expires_at > ?1), 0),
	coalesce(min(CASE WHEN state = 1 AND held_at IS NULL AND expires_at > ?1 THEN created_at END), ?1),
	coalesce(min(CASE WHEN held_at IS NOT NULL AND expires_at > ?1 THEN held_at END), ?1),
	coalesce(sum(expires_at <= ?1), 0),
	count(*),
	coalesce(sum(length(scope) + length(key) + length(fingerprint) + coalesce(length(outcome), 0) + coalesce(length(steps), 0)), 0)
FROM "once_records"`

	sweepSQL = `DELETE FROM "once_records" WHERE (scope, key) IN (
	SELECT scope, key FROM "once_records" WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2)`
)

// placeholderTable is the quoted default table name; the index name starts
// with it too, so one replacement renames both.
const placeholderTable = `"once_records`

type statements struct {
	read, readClaim, get, insert, takeover, resolvePending, complete, completedBy, renew string
	checkpoint, release, endLease, delete, sweep, hold, leaseHeld                        string
	listPending, listHeld, listCompleted, count                                          string
}

func newStatements(table string) statements {
	r := strings.NewReplacer(placeholderTable, `"`+table)
	return statements{
		read:           r.Replace(readSQL),
		readClaim:      r.Replace(readClaimSQL),
		get:            r.Replace(getSQL),
		checkpoint:     r.Replace(checkpointSQL),
		endLease:       r.Replace(endLeaseSQL),
		insert:         r.Replace(insertSQL),
		takeover:       r.Replace(takeoverSQL),
		resolvePending: r.Replace(resolvePendingSQL),
		complete:       r.Replace(completeSQL),
		completedBy:    r.Replace(completedBySQL),
		renew:          r.Replace(renewSQL),
		release:        r.Replace(releaseSQL),
		delete:         r.Replace(deleteSQL),
		sweep:          r.Replace(sweepSQL),
		hold:           r.Replace(holdSQL),
		leaseHeld:      r.Replace(leaseHeldSQL),
		listPending:    r.Replace(listPendingSQL),
		listHeld:       r.Replace(listHeldSQL),
		listCompleted:  r.Replace(listCompletedSQL),
		count:          r.Replace(countSQL),
	}
}

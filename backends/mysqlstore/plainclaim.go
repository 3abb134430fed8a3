package mysqlstore

import (
	"context"
	"database/sql"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

// The statements of the default (plain) claim: prepared statements, no
// procedure. Deadlines are computed on the server's clock and saturate
// like the procedure's.
const (
	// peekSQL: owner, scope, key, scope, key. A consistent read, no lock;
	// live tells an expired row from a live one. The detail columns (age,
	// hold, a completed record's time left) cost the server a few
	// TIMESTAMPDIFFs and the reply a few bytes, no round trip. The
	// checkpoints come only with a row that the claim re-sends (pending,
	// owner's) or may take over (a lapsed lease, an ended hold), through
	// a scalar subquery that runs only then, in the same read view: a
	// replay or a duplicate in progress neither reads nor returns them.
	peekSQL = peekHead + "), NULL),\n" + peekTail

	// peekLockedSQL: as peekSQL. peekSQL as a locking read, the subquery
	// included: the latest committed version of the row, whatever the
	// transaction's snapshot, under a shared lock kept until the
	// transaction ends. Only a claim in a caller's transaction sends it
	// (see txStore.Claim).
	peekLockedSQL = peekHead + " LOCK IN SHARE MODE), NULL),\n" + peekTail + "\nLOCK IN SHARE MODE"

	// peekHead and peekTail are peekSQL's text before and after the end
	// of its subquery.
	peekHead = "SELECT state, fingerprint, owner, outcome,\n" +
		"\tCOALESCE(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), lease_until), 0),\n" +
		"\trevision, expires_at > UTC_TIMESTAMP(6),\n" +
		"\tIF(state = 1 AND owner = ? OR state IN (1, 3) AND lease_until <= UTC_TIMESTAMP(6)\n" +
		"\t\tAND (state = 1 OR hold_until <= UTC_TIMESTAMP(6)),\n" +
		"\t\t(SELECT s.steps FROM `once_records` AS s WHERE s.scope = ? AND s.`key` = ?"
	peekTail = "\t" + detailColumns + "\n" +
		"FROM `once_records` WHERE scope = ? AND `key` = ?"

	// insertClaimSQL: scope, key, fingerprint, owner, lease µs, lease µs,
	// retention µs.
	insertClaimSQL = "INSERT IGNORE INTO `once_records`\n" +
		"\t(scope, `key`, fingerprint, state, owner, lease_until, created_at, expires_at)\n" +
		"VALUES (?, ?, ?, 1, ?,\n" +
		"\tCOALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + "),\n" +
		"\tUTC_TIMESTAMP(6),\n" +
		"\tGREATEST(COALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + "),\n" +
		"\t\tCOALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + ")))"

	// takeoverSQL: fingerprint, fingerprint, owner, lease µs, lease µs,
	// retention µs, scope, key, revision, old owner, fingerprint,
	// fingerprint. It applies only to the row version that was read
	// (revision and owner), and only while that row is still expired, or
	// pending with a lapsed lease, or held with both its hold and any
	// reconciler's lease ended, with a matching fingerprint, so it never
	// takes a record that changed in between (a checkpoint bumps revision
	// too: a takeover keeps the checkpoints that peek read). It clears the
	// checkpoints of an expired row. Assignments read only
	// columns not assigned before them.
	takeoverSQL = "UPDATE `once_records` SET\n" +
		"\tfingerprint = IF(expires_at > UTC_TIMESTAMP(6) AND LENGTH(?) = 0, fingerprint, ?),\n" +
		"\tsteps = IF(expires_at > UTC_TIMESTAMP(6), steps, NULL),\n" +
		"\tstate = 1, owner = ?, outcome = NULL, resolved = FALSE, revision = revision + 1,\n" +
		"\tlease_until = COALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + "),\n" +
		"\tcreated_at = UTC_TIMESTAMP(6), completed_at = NULL,\n" +
		"\theld_at = NULL, hold_until = NULL, held_code = NULL, held_message = NULL,\n" +
		"\texpires_at = GREATEST(COALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + "),\n" +
		"\t\tCOALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + "))\n" +
		"WHERE scope = ? AND `key` = ? AND revision = ? AND owner <=> ?\n" +
		"\tAND (expires_at <= UTC_TIMESTAMP(6) OR (state IN (1, 3) AND lease_until <= UTC_TIMESTAMP(6)\n" +
		"\t\tAND (state = 1 OR hold_until <= UTC_TIMESTAMP(6))\n" +
		"\t\tAND (LENGTH(?) = 0 OR LENGTH(fingerprint) = 0 OR fingerprint = ?)))"
)

// peeked is the row peekSQL reads.
type peeked struct {
	found    bool
	row      procRow
	owner    sql.NullString
	revision int64
	live     bool
	// steps is the row's checkpoints when the claim may re-send or take
	// it over, nil otherwise.
	steps []byte
}

// peek reads the key's row with query: peekSQL, or peekLockedSQL.
func (r runner) peek(ctx context.Context, query string, p backends.ClaimParams) (peeked, error) {
	var pk peeked
	found, err := r.queryRow(ctx, "claim", query,
		pk.row.withDetails(&pk.row.state, &pk.row.fp, &pk.owner, &pk.row.outcome, &pk.row.leaseUS, &pk.revision, &pk.live, &pk.steps),
		p.Owner, p.Scope, p.Key, p.Scope, p.Key)
	pk.found = found
	return pk, err
}

// claimPlain is the pool store's default Claim, in one of two orders (see
// claimStatements).
func (r runner) claimPlain(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	return r.claimStatements(ctx, p, !r.s.cfg.readFirst, r.s.sql.peek)
}

// claimStatements claims with plain statements, reading the key with peek
// (peekSQL, or on a caller's transaction peekLockedSQL), in one of two
// orders.
//
// Insert first (the default): an INSERT IGNORE alone claims a new key.
// When it finds the key, a plain read follows and decides as below. When
// it waited LockTimeout for a row lock in vain, the read still answers a
// replay, a mismatch or a re-send from the last committed version, and
// only a key that would need a write is reported in progress.
//
// Read first (Config.ReadFirstClaims): a plain read decides a replay, a
// duplicate in progress, a mismatch and a re-send by itself, taking no
// lock; a new key costs an INSERT IGNORE more.
//
// Either way an expired record or a lapsed lease costs a conditional
// UPDATE after the read. A takeover and a re-send return the checkpoints
// that the read returned (see peekSQL). When a write finds the key
// changed by a concurrent session, or InnoDB picked it as a deadlock
// victim (only that autocommit statement was rolled back), it reads again
// (a fresh snapshot: each statement of the pool store commits on its own;
// in a transaction peek is a locking read), at most four attempts in all. When all four lost, it
// returns an *Error ("key changed concurrently on every attempt; retry"),
// having claimed nothing: the core's Do fails closed with it (fn does not
// run). In a caller's transaction a deadlock rolled the whole transaction
// back, and is returned at once, and a locking read that waited
// LockTimeout in vain reports the key in progress.
func (r runner) claimStatements(ctx context.Context, p backends.ClaimParams, insertFirst bool, peek string) (backends.ClaimResult, error) {
	lease, retention := sqlstore.Micros(p.Lease), sqlstore.Micros(p.Retention)
	insert := func() (int64, error) {
		return r.exec(ctx, "claim", r.s.sql.insertClaim,
			p.Scope, p.Key, nonNil(p.Fingerprint), p.Owner, lease, lease, retention)
	}
	inProgress := backends.ClaimResult{Existing: procRow{}.existing(p.Fingerprint)}
	lockTimedOut := false
	for attempt := range 4 {
		var (
			n        int64
			err      error
			tookOver bool
			steps    []byte // the checkpoints taken over
		)
		if attempt == 0 && insertFirst {
			n, err = insert()
		} else {
			pk, perr := r.peek(ctx, peek, p)
			switch {
			case code(perr) == CodeLockWaitTimeout:
				// A locking read met a concurrent uncommitted write.
				return inProgress, nil
			case perr != nil:
				return backends.ClaimResult{}, perr
			}
			write := !pk.found || !pk.live || (pk.row.lapsed() &&
				backends.FingerprintMatches(pk.row.fp, p.Fingerprint))
			switch {
			case pk.found && pk.live && pk.row.state == 1 && pk.owner.Valid && pk.owner.String == p.Owner:
				return backends.ClaimResult{Claimed: true, Steps: noneEmpty(pk.steps)}, nil // a re-send
			case !write:
				return backends.ClaimResult{Existing: pk.row.existing(p.Fingerprint)}, nil
			case lockTimedOut:
				return inProgress, nil // the write would wait again
			case !pk.found:
				n, err = insert()
			default:
				fp := nonNil(p.Fingerprint)
				n, err = r.exec(ctx, "claim", r.s.sql.takeover,
					fp, fp, p.Owner, lease, lease, retention, p.Scope, p.Key, pk.revision, pk.owner, fp, fp)
				tookOver = pk.live
				if tookOver {
					steps = noneEmpty(pk.steps)
				}
			}
		}
		switch {
		case code(err) == CodeLockWaitTimeout && attempt == 0 && insertFirst:
			// The first INSERT met a row lock: let the read decide.
			lockTimedOut = true
		case code(err) == CodeLockWaitTimeout:
			// A concurrent uncommitted claim (a transaction: once.DoTx) holds the key.
			return inProgress, nil
		case code(err) == CodeDeadlock && r.tx == nil:
			continue // only this autocommit statement was rolled back
		case err != nil:
			return backends.ClaimResult{}, err
		case n == 1:
			return backends.ClaimResult{Claimed: true, TookOver: tookOver, Steps: steps}, nil
		}
	}
	return backends.ClaimResult{}, &Error{Op: "claim", kind: "key changed concurrently on every attempt; retry"}
}

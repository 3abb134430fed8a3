package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

// maxAttempts bounds the runs (the first included) of Claim's and
// Resolve's statement when a concurrent session commits the same key
// between the statement's snapshot and its insert; each re-run takes a
// fresh snapshot, so the second attempt sees the row unless yet another
// change lands in between. When every run lost, raceLoop returns
// errContention. It also bounds the runs of a Claim, Resolve or
// LeaseHeld that decides again because the held record it met changed
// before its report was read (heldAgain, leaseHeld): the last run's
// report is returned then.
const maxAttempts = 4

// fastRow is the row read_claim.sql and claim_tx.sql return (found), or
// stands for insert_claim.sql's insert (insertedRow); none is found when
// the key is held by a row the statements cannot see yet. Its timestamps are the
// stored row's, with the server's clock (now), so that the decisions
// below use the store's clock without numeric arithmetic on the server.
type fastRow struct {
	found   bool
	state   int16 // 0: the statement inserted the claim
	fp      []byte
	outcome []byte
	own     bool // the row's owner is this claim's token
	// steps is the row's checkpoints, sent only when the row is this
	// claim's own pending row (a re-send); nil otherwise.
	steps []byte
	// lease, expires, hold, now and claimed in microseconds since the
	// Unix epoch (±infinity saturated; a NULL lease, hold or claimed reads
	// as 0, unused). claimed is a pending row's claimed_at.
	lease, expires, hold, now, claimed int64
}

func (r *fastRow) scan(row pgx.Row) error {
	err := row.Scan(r)
	if err == pgx.ErrNoRows {
		return nil
	}
	r.found = err == nil
	return err
}

// ScanRow implements pgx.RowScanner: it decodes the binary columns of the
// extended protocol itself (the claim's hot path, with no scan plan and no
// allocation but the copies of the stored fingerprint and outcome), and
// lets pgx scan the text columns of the simple protocol.
func (r *fastRow) ScanRow(rows pgx.Rows) error {
	fields, values := rows.FieldDescriptions(), rows.RawValues()
	if len(values) != 10 || len(fields) != 10 {
		return fmt.Errorf("claim row has %d columns, want 10", len(values))
	}
	for _, f := range fields {
		if f.Format != pgx.BinaryFormatCode {
			return r.scanText(rows)
		}
	}
	if len(values[0]) != 2 || len(values[3]) != 1 {
		return errors.New("claim row: bad state or owner column")
	}
	r.state = int16(binary.BigEndian.Uint16(values[0]))
	r.fp, r.outcome = cloneBytes(values[1]), cloneBytes(values[2])
	r.own = values[3][0] != 0
	for i, dst := range [...]*int64{&r.lease, &r.expires, &r.hold, &r.now, &r.claimed} {
		us, err := binaryTimestamptz(values[4+i])
		if err != nil {
			return err
		}
		*dst = us
	}
	r.steps = stepsOrNil(cloneBytes(values[9]))
	return nil
}

func (r *fastRow) scanText(rows pgx.Rows) error {
	var lease, expires, hold, now, claimed pgtype.Timestamptz
	if err := rows.Scan(&r.state, &r.fp, &r.outcome, &r.own, &lease, &expires, &hold, &now, &claimed, &r.steps); err != nil {
		return err
	}
	r.lease, r.expires, r.hold, r.now = unixMicros(lease), unixMicros(expires), unixMicros(hold), unixMicros(now)
	r.claimed = unixMicros(claimed)
	r.steps = stepsOrNil(r.steps)
	return nil
}

// cloneBytes copies a column's bytes, which pgx reuses for the next row;
// nil (NULL) stays nil.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// stepsOrNil returns a steps column as ClaimResult.Steps and Record.Steps
// report it: nil for NULL, and for an empty blob, which no statement
// stores (Checkpoint stores NULL for none).
func stepsOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// pgEpochMicros is 2000-01-01 00:00:00 UTC, PostgreSQL's epoch, in
// microseconds since the Unix epoch.
const pgEpochMicros = 946_684_800_000_000

// binaryTimestamptz decodes a binary timestamptz (microseconds since
// PostgreSQL's epoch; its maximum and minimum are ±infinity) to
// microseconds since the Unix epoch, as unixMicros does; 0 for NULL.
func binaryTimestamptz(b []byte) (int64, error) {
	switch {
	case b == nil:
		return 0, nil
	case len(b) != 8:
		return 0, fmt.Errorf("claim row: timestamptz of %d bytes", len(b))
	}
	us := int64(binary.BigEndian.Uint64(b))
	switch {
	case us == math.MinInt64:
		return us, nil
	case us > math.MaxInt64-pgEpochMicros: // infinity, or past year 292 277
		return math.MaxInt64, nil
	}
	return us + pgEpochMicros, nil
}

// decide turns a fastRow into a result, or reports that the takeover
// statement must decide (slow): the row had expired, or was pending with a
// lapsed lease (or held, its hold and reconciler lease ended) and a
// matching fingerprint, or was not visible.
func (r fastRow) decide(given []byte) (res backends.ClaimResult, slow bool) {
	live := r.expires > r.now
	switch {
	case r.found && r.state == 0:
		return backends.ClaimResult{Claimed: true}, false
	case !r.found || !live:
		return backends.ClaimResult{}, true
	case r.state == int16(backends.StatePending) && r.own:
		// The same claim again (its owner token is unique to one call): a
		// re-send after a lost reply. It holds the claim, and the
		// checkpoints written since.
		return backends.ClaimResult{Claimed: true, Steps: r.steps}, false
	case r.lapsed() && backends.FingerprintMatches(r.fp, given): // pending or held
		return backends.ClaimResult{}, true
	}
	rec := existing(r.state, r.fp, r.outcome, remaining(r.lease, r.now))
	switch rec.State {
	case backends.StateCompleted:
		rec.ExpiresIn = remaining(r.expires, r.now)
	case backends.StatePending:
		// A held row's age (since its hold) is read with its hold's
		// details (heldDetails).
		rec.Age = age(r.claimed, r.now)
	}
	return backends.ClaimResult{Existing: rec}, false
}

// age returns the time from claimed until now (both microseconds since the
// Unix epoch, now finite), never negative; 0 when claimed is unknown (0, a
// NULL claimed_at) or infinite.
func age(claimed, now int64) time.Duration {
	if claimed == 0 || claimed == math.MinInt64 || claimed == math.MaxInt64 {
		return 0
	}
	return max(sqlstore.FromMicros(now-claimed), 0)
}

// lapsed reports a pending row whose lease ended, or a held row whose hold
// and reconciler lease both ended.
func (r fastRow) lapsed() bool {
	switch backends.State(r.state) {
	case backends.StatePending:
		return r.lease <= r.now
	case backends.StateHeld:
		return r.lease <= r.now && r.hold <= r.now
	}
	return false
}

// unixMicros returns t in microseconds since the Unix epoch, saturating
// ±infinity; 0 for NULL.
func unixMicros(t pgtype.Timestamptz) int64 {
	switch {
	case !t.Valid:
		return 0
	case t.InfinityModifier == pgtype.Infinity:
		return math.MaxInt64
	case t.InfinityModifier == pgtype.NegativeInfinity:
		return math.MinInt64
	}
	return t.Time.UnixMicro()
}

// remaining returns the time from now until until (both microseconds since
// the Unix epoch, now finite), saturating at the range of time.Duration.
func remaining(until, now int64) time.Duration {
	switch {
	case until == math.MaxInt64:
		return math.MaxInt64
	case until == math.MinInt64:
		return math.MinInt64
	}
	return sqlstore.FromMicros(until - now)
}

// claimRow is the single row takeover.sql returns.
type claimRow struct {
	inserted bool
	tookOver *bool // nil when upd did nothing
	found    bool  // e saw a row
	live     bool  // that row had not expired
	state    int16
	fp       []byte
	outcome  []byte
	leaseUS  int64
	ownClaim bool  // e saw a live pending row of this very owner
	ageUS    int64 // since claimed_at; 0 when NULL (not pending)
	expireUS int64 // until expires_at
	// steps is the checkpoints of the row taken over (tookOver set) or
	// of this owner's own row (ownClaim); nil for any other answer.
	steps []byte
}

// decide turns a claimRow into a result, or reports that the statement
// must run again (retry) because it lost a race with a concurrent commit.
func (r claimRow) decide(given []byte) (res backends.ClaimResult, retry bool) {
	switch {
	case r.inserted:
		return backends.ClaimResult{Claimed: true}, false
	case r.tookOver != nil:
		return backends.ClaimResult{Claimed: true, TookOver: *r.tookOver, Steps: r.steps}, false
	case r.ownClaim:
		// The same claim again (its owner token is unique to one call): a
		// re-send after a lost reply. It holds the claim.
		return backends.ClaimResult{Claimed: true, Steps: r.steps}, false
	case !r.found || !r.live:
		// Nothing visible (or only an expired row), yet no write applied:
		// the key was written after our snapshot.
		return backends.ClaimResult{}, true
	}
	rec := existing(r.state, r.fp, r.outcome, sqlstore.FromMicros(r.leaseUS))
	if rec.State == backends.StatePending && rec.LeaseRemaining <= 0 && backends.FingerprintMatches(r.fp, given) {
		// Eligible for takeover, yet upd did not apply: the row changed
		// after our snapshot.
		return backends.ClaimResult{}, true
	}
	switch rec.State {
	case backends.StatePending:
		rec.Age = max(sqlstore.FromMicros(r.ageUS), 0)
	case backends.StateCompleted:
		rec.ExpiresIn = sqlstore.FromMicros(r.expireUS)
	}
	return backends.ClaimResult{Existing: rec}, false
}

// existing builds the backends.Record of a live row.
func existing(state int16, fp, outcome []byte, lease time.Duration) backends.Record {
	rec := backends.Record{State: backends.State(state), Fingerprint: fp}
	if len(rec.Fingerprint) == 0 {
		rec.Fingerprint = nil
	}
	if rec.State == backends.StatePending || rec.State == backends.StateHeld {
		rec.LeaseRemaining = lease
	} else {
		rec.Outcome = outcome
		if rec.Outcome == nil {
			rec.Outcome = []byte{}
		}
	}
	return rec
}

func (r *claimRow) scan(row pgx.Row) error {
	if err := row.Scan(&r.inserted, &r.tookOver, &r.found, &r.live, &r.state, &r.fp, &r.outcome, &r.leaseUS, &r.ownClaim, &r.ageUS, &r.expireUS, &r.steps); err != nil {
		return err
	}
	r.steps = stepsOrNil(r.steps)
	return nil
}

// claimOnce runs takeover.sql once on db.
func (q statements) claimOnce(ctx context.Context, db querier, p backends.ClaimParams) (claimRow, error) {
	var r claimRow
	if _, err := interpretError("claim", r.scan(db.QueryRow(ctx, q.Takeover, q.claimArgs(p)...))); err != nil {
		return claimRow{}, err
	}
	return r, nil
}

// insertLockTimeout is insert_claim.sql's lock_timeout when it goes
// first (insertFirst): the shortest the server accepts. The insert waits
// on a key's row whenever a transaction not yet ended inserted, updated or
// deleted it, also when the row's committed version answers the claim (a
// reconciler's transaction that leased or resolves a held record): past
// insertLockTimeout the claim reads first instead (readFirst), which reads
// that committed version without waiting, and waits at most
// Config.LockTimeout only when it must (no row visible).
var insertLockTimeout any = "1ms"

// lockWait reports that a statement gave up waiting for a transaction that
// wrote the key's row (its lock_timeout).
func lockWait(err error) bool { return code(err) == CodeLockNotAvailable }

// insertClaim runs insert_claim.sql once on db, with a's lock_timeout
// (boxed once: insertLockTimeout or statements.lockTimeout): whether it
// inserted the claim. When it did not, the key has a row.
func (q statements) insertClaim(ctx context.Context, db querier, a *claimArgs) (bool, error) {
	return wroteRow(ctx, db, "claim", q.InsertClaim, a.args[:])
}

// wroteRow runs a statement that writes at most one row and returns none
// (insert_claim.sql, renew.sql, checkpoint.sql) on db, and reports from
// its command tag whether it wrote one. A tag that is neither an INSERT's
// nor an UPDATE's (a DB wrapper that does not pass the driver's on) is an
// *Error: the write's outcome is unknown.
func wroteRow(ctx context.Context, db querier, op, sql string, args []any) (bool, error) {
	tag, err := db.Exec(ctx, sql, args...)
	if err != nil {
		_, err = interpretError(op, err)
		return false, err
	}
	if !tag.Insert() && !tag.Update() {
		return false, &Error{Op: op, kind: fmt.Sprintf("unexpected command tag %q: the DB's Exec must return the driver's", tag.String())}
	}
	return tag.RowsAffected() == 1, nil
}

// readClaim runs read_claim.sql once on db: the key's row as the claim
// decides from it, or none (found false).
func (q statements) readClaim(ctx context.Context, db querier, a *claimArgs) (fastRow, error) {
	var r fastRow
	if _, err := interpretError("claim", r.scan(db.QueryRow(ctx, q.ReadClaim, a.read[:]...))); err != nil {
		return fastRow{}, err
	}
	return r, nil
}

// insertedRow is the fastRow of a claim that insert_claim.sql inserted:
// decide answers Claimed.
var insertedRow = fastRow{found: true, state: 0}

// insertFirst runs a claim's plain statements insert first: insert_claim.sql
// (waiting at most insertLockTimeout), then, when it inserted nothing,
// read_claim.sql; readFirst when the insert gave up waiting. A row the read
// does not find (deleted after the insert's conflict) is not visible: the
// caller sends takeover.sql.
func (q statements) insertFirst(ctx context.Context, db querier, p backends.ClaimParams) (fastRow, error) {
	a := newClaimArgs(p, insertLockTimeout)
	inserted, err := q.insertClaim(ctx, db, a)
	switch {
	case lockWait(err):
		a.args[6] = q.lockTimeout
		return q.readFirstWith(ctx, db, a)
	case err != nil || inserted:
		return insertedRow, err
	}
	return q.readClaim(ctx, db, a)
}

// readFirst runs a claim's plain statements read first: read_claim.sql,
// then, when it found no row, insert_claim.sql, which waits at most
// Config.LockTimeout for a transaction not yet ended that wrote the key's
// row (a DoTx's claim). When that insert inserted nothing (a row committed
// after the read's snapshot), no row is visible: the caller sends
// takeover.sql.
func (q statements) readFirst(ctx context.Context, db querier, p backends.ClaimParams) (fastRow, error) {
	return q.readFirstWith(ctx, db, newClaimArgs(p, q.lockTimeout))
}

// readFirstWith is readFirst with its arguments, a's lock_timeout
// Config.LockTimeout.
func (q statements) readFirstWith(ctx context.Context, db querier, a *claimArgs) (fastRow, error) {
	r, err := q.readClaim(ctx, db, a)
	if err != nil || r.found {
		return r, err
	}
	inserted, err := q.insertClaim(ctx, db, a)
	if err != nil || !inserted {
		return fastRow{}, err
	}
	return insertedRow, nil
}

// claimLoop runs a claim's first statements (fast: the Store's plain
// insert and read, or claim_tx.sql in a transaction), which decide every
// claim except a takeover, the re-use of an expired record and a race
// with a concurrent commit of the key; for those it runs takeover.sql
// (attempt), again when it lost a race with a concurrent commit, at most
// maxAttempts times in all (raceLoop: errContention then). A claim that
// gave up waiting for a concurrent uncommitted transaction reports the key
// pending, with lockTimeoutHint as its lease.
func claimLoop(ctx context.Context, p backends.ClaimParams, fast func(context.Context) (fastRow, error), attempt func(context.Context) (claimRow, error)) (backends.ClaimResult, error) {
	if err := checkInput("claim", p.Scope, p.Key, p.Fingerprint, p.Owner); err != nil {
		return backends.ClaimResult{}, err
	}
	res, err := func() (backends.ClaimResult, error) {
		r, err := fast(ctx)
		if err != nil {
			return backends.ClaimResult{}, err
		}
		if res, slow := r.decide(p.Fingerprint); !slow {
			return res, nil
		}
		return raceLoop(ctx, "claim", attempt, func(r claimRow) (backends.ClaimResult, bool) { return r.decide(p.Fingerprint) })
	}()
	if code(err) == CodeLockNotAvailable {
		return backends.ClaimResult{Existing: heldByTx(p.Fingerprint)}, nil
	}
	return res, err
}

// heldByTx is the record reported for a key held by an uncommitted
// transaction, the stand-in of "A record the store cannot see" in package
// backends: pending, with lockTimeoutHint as its lease. Its fingerprint
// is unknown (the row is not visible yet); the caller's own is reported (a
// copy: the Record is the caller's), so the core answers ErrInProgress,
// never ErrKeyReused, and the retry learns the truth. Its Age is unknown
// too, and 0.
func heldByTx(fp []byte) backends.Record {
	return backends.Record{State: backends.StatePending, Fingerprint: bytes.Clone(fp), LeaseRemaining: lockTimeoutHint}
}

// raceLoop runs attempt until decide accepts its row, at most maxAttempts
// times: each re-run takes a fresh snapshot after losing a race with a
// concurrent commit of the same key. When decide refused every row, it
// returns errContention(op).
func raceLoop[Row, Result any](ctx context.Context, op string, attempt func(context.Context) (Row, error), decide func(Row) (Result, bool)) (Result, error) {
	var zero Result
	for range maxAttempts {
		row, err := attempt(ctx)
		if err != nil {
			return zero, err
		}
		if res, retry := decide(row); !retry {
			return res, nil
		}
	}
	return zero, errContention(op)
}

package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stagedoor/once/backends"
)

// Default names and limits of a Config.
const (
	DefaultTable          = "once_records"
	DefaultLockTimeout    = 5 * time.Second
	DefaultSweepBatchSize = 1000
)

// errClosed is backends.ErrClosed, reachable through errors.Is from the
// *Error of an operation on a closed Store.
var errClosed = backends.ErrClosed

// Config configures a Store. A nil *Config means defaults; so does the
// zero value of each field.
type Config struct {
	// Table is the name of the records table, in the connection's current
	// database. Migrate also creates <Table>_migrations, the index
	// <Table>_state_idx and the procedure <Table>_call_v1. Lower-case
	// ASCII letters, digits and underscores, not starting with a digit,
	// at most 53 bytes (see
	// IdentifierError for why not upper case). Defaults to "once_records".
	Table string

	// LockTimeout bounds how long any operation of the Store waits for a
	// row lock held by a concurrent transaction (typically a claim made
	// in a transaction by once.DoTx and not yet committed), on the pool and in a
	// transaction alike, whatever the session's innodb_lock_wait_timeout
	// (50 s by default), which the Store leaves unchanged. Past it, Claim
	// reports the key pending with a short LeaseRemaining (the core answers
	// ErrInProgress), Resolve reports it pending, and the fenced writes and
	// Admin's Delete return an *Error of Code CodeLockWaitTimeout. The
	// server counts it in whole seconds: it is rounded up, so any positive
	// value below a second (a microsecond included) bounds the wait at one
	// second. On MariaDB (10.1.2 and later) every statement carries it as
	// SET STATEMENT innodb_lock_wait_timeout=N FOR; on MySQL (8.0.3 and
	// later) as a SET_VAR optimizer hint, and the procedures set it for
	// their own run. Defaults to 5 seconds.
	LockTimeout time.Duration

	// OneRoundTripClaims makes Claim call the stored procedure
	// <Table>_call_v1, so that every claim answer is one round trip (a first
	// execution two, with Complete), each answer taking no lock but the
	// write's. The price is server CPU: a CALL costs MariaDB several times a
	// plain statement (see the README's measurements), so pick it only when
	// the network's latency, not the server, is the bottleneck. A store
	// bound to a transaction (BeginTx, InTx) always uses the procedure.
	OneRoundTripClaims bool

	// ReadFirstClaims makes the plain-statement Claim read before it
	// writes. By default (insert first) Claim sends an INSERT IGNORE, which
	// alone claims a new key (a first execution is two round trips, with
	// Complete), then, when the key exists, a lock-free SELECT: a replay, an
	// in-progress answer and a mismatch cost two round trips, and the
	// INSERT takes a shared lock on the existing row for its duration, so
	// it waits (at most LockTimeout) while another transaction holds the
	// row. ReadFirstClaims reverses the order: the SELECT alone answers a
	// replay, a duplicate in progress and a mismatch (one round trip, no
	// lock), and a new key costs three round trips per first execution.
	// Pick it when most calls are replays (above roughly three quarters, by
	// the README's measurements). Ignored with OneRoundTripClaims.
	ReadFirstClaims bool

	// SweepBatchSize is the number of expired rows Sweep deletes per
	// statement. Defaults to 1000.
	SweepBatchSize int

	// OnSweepError is called by RunSweeper with each error of a sweep; the
	// next tick tries again. Defaults to ignoring the error.
	OnSweepError func(error)
}

// resolved is a validated Config with its defaults applied.
type resolved struct {
	table          string
	lockWaitS      int64
	oneRoundTrip   bool
	readFirst      bool
	sweepBatchSize int
	onSweepError   func(error)
}

func resolveConfig(cfg *Config) (resolved, error) {
	r := resolved{
		table:          DefaultTable,
		lockWaitS:      seconds(DefaultLockTimeout),
		sweepBatchSize: DefaultSweepBatchSize,
		onSweepError:   func(error) {},
	}
	if cfg != nil {
		if cfg.Table != "" {
			r.table = cfg.Table
		}
		if cfg.LockTimeout > 0 {
			r.lockWaitS = seconds(cfg.LockTimeout)
		}
		if cfg.SweepBatchSize > 0 {
			r.sweepBatchSize = cfg.SweepBatchSize
		}
		r.oneRoundTrip = cfg.OneRoundTripClaims
		r.readFirst = cfg.ReadFirstClaims
		if cfg.OnSweepError != nil {
			r.onSweepError = cfg.OnSweepError
		}
	}
	if err := validateIdentifier("Table", r.table, maxTableLen); err != nil {
		return resolved{}, err
	}
	return r, nil
}

// maxLockWaitS is innodb_lock_wait_timeout's maximum.
const maxLockWaitS = 1 << 30

// seconds rounds a positive duration up to whole seconds, within
// innodb_lock_wait_timeout's range.
func seconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return min(max(s, 1), maxLockWaitS)
}

// Store is the MariaDB/MySQL backend. It is safe for concurrent use. The
// zero value is not usable; call New.
type Store struct {
	db    *sql.DB
	cfg   resolved
	sql   statements
	stmts stmtCache
	// sessionOK is set once checkSession passed.
	sessionOK atomic.Bool
}

var _ backends.Store = (*Store)(nil)

// New returns a Store over db, which the caller keeps owning: the Store
// never closes it. The Store scans no DATETIME value, so the DSN's
// parseTime and loc do not matter, nor does the session time_zone; but the
// sessions must run with autocommit on (the default: no autocommit=0 in
// the DSN or init_connect), the server's clock (no timestamp in the DSN)
// and an isolation level above READ UNCOMMITTED (no
// tx_isolation='READ-UNCOMMITTED' in the DSN nor as the server's default),
// or a claim would never commit, leases would not run out, or a duplicate
// would be answered an uncommitted outcome. The Store checks all three on
// its first operation (and Migrate), on the session it runs on, until a
// check passes: one connection of the pool speaks for all, since they
// share the DSN. A failed check is an *Error wrapping
// ErrSession, returned before any write. The records table must exist (see
// Migrate). New checks cfg and returns an *IdentifierError for an invalid
// table name; it does not contact the server.
func New(db *sql.DB, cfg *Config) (*Store, error) {
	r, err := resolveConfig(cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, cfg: r, sql: newStatements(r.table, r.lockWaitS)}
	s.stmts.db = db
	return s, nil
}

// Close releases the statements the Store prepared. It does not close the
// *sql.DB. Operations after Close fail with an *Error that wraps
// backends.ErrClosed.
func (s *Store) Close() error { return s.stmts.close() }

// stmtCache prepares each statement once on the pool; database/sql then
// re-prepares it lazily on each connection it runs on and keeps it there.
type stmtCache struct {
	db     *sql.DB
	mu     sync.Mutex
	closed bool
	m      map[string]*sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, op, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, closedError(op)
	}
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if _, err := interpretError(op, err); err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	c.m[query] = st
	return st, nil
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var first error
	for q, st := range c.m {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.m, q)
	}
	_, err := interpretError("close", first)
	return err
}

// runner runs the Store's prepared statements on the pool, or on one
// transaction when tx is set.
type runner struct {
	s  *Store
	tx *sql.Tx
}

func (r runner) stmt(ctx context.Context, op, query string) (*sql.Stmt, error) {
	st, err := r.s.stmts.get(ctx, op, query)
	if err != nil {
		return nil, err
	}
	if r.tx == nil {
		return st, r.s.checkSession(ctx, op, r.s.db.QueryRowContext)
	}
	if err := r.s.checkSession(ctx, op, r.tx.QueryRowContext); err != nil {
		return nil, err
	}
	return r.tx.StmtContext(ctx, st), nil
}

func (r runner) queryRow(ctx context.Context, op, query string, dest []any, args ...any) (found bool, err error) {
	st, err := r.stmt(ctx, op, query)
	if err != nil {
		return false, err
	}
	return interpretError(op, st.QueryRowContext(ctx, args...).Scan(dest...))
}

// deadlockAttempts bounds the runs of a pool Claim or Resolve that InnoDB
// picks as a deadlock victim. Outside a caller's transaction only the
// victim's own autocommit statement was rolled back, so running the CALL
// again is safe; inside one, the whole transaction was rolled back and the
// error is returned.
const deadlockAttempts = 5

// call runs a procedure that returns one row, again after a deadlock when
// it runs on the pool.
func (r runner) call(ctx context.Context, op, query string, dest []any, args ...any) error {
	for attempt := 1; ; attempt++ {
		_, err := r.queryRow(ctx, op, query, dest, args...)
		if err == nil || r.tx != nil || attempt == deadlockAttempts || code(err) != CodeDeadlock || ctx.Err() != nil {
			return err
		}
	}
}

func (r runner) exec(ctx context.Context, op, query string, args ...any) (int64, error) {
	st, err := r.stmt(ctx, op, query)
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(ctx, args...)
	if _, err := interpretError(op, err); err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	_, err = interpretError(op, err)
	return n, err
}

func (s *Store) pool() runner { return runner{s: s} }

// Claim implements backends.Store with plain statements (inserting first:
// one round trip for a new claim, two for a replay, a duplicate or a
// mismatch; reading first the other way round), or in one CALL with
// Config.OneRoundTripClaims (see the package doc). Races with a concurrent
// session on the same key cost more, boundedly: the plain statements run
// again at most four attempts in all (see claimPlain), the procedure
// retries inside the CALL at most four times, and a CALL on the pool that
// InnoDB picks as a deadlock victim is sent again, at most five times in
// all (deadlockAttempts; inside a caller's transaction the deadlock is
// returned at once). When the bound is exhausted Claim returns an *Error
// (the procedure's CodeSignal, "key changed concurrently on every
// attempt", or CodeDeadlock) having claimed nothing.
func (s *Store) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	return s.pool().claim(ctx, p)
}

// Complete implements backends.Store in one UPDATE; a repeated Complete
// that finds the record already completed by the same owner with the same
// outcome costs one more SELECT to tell so.
func (s *Store) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	return s.pool().complete(ctx, p)
}

// Renew implements backends.Store in one UPDATE.
func (s *Store) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	return s.pool().renew(ctx, p)
}

// Release implements backends.Store in one DELETE when the record has no
// checkpoints. Otherwise (the record has checkpoints, or is not the
// owner's) an UPDATE follows, which ends the lease of the owner's record
// with checkpoints: two round trips. MariaDB and MySQL have no single
// statement that deletes a row or else updates it, and a procedure would
// cost every release a CALL.
func (s *Store) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	return s.pool().release(ctx, p)
}

// Checkpoint implements backends.Store in one UPDATE, fenced as Complete's
// and Renew's.
func (s *Store) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	return s.pool().checkpoint(ctx, p)
}

// Resolve implements backends.Store in one CALL, bounded as Claim's: the
// procedure retries a race with a concurrent session at most four times
// inside the CALL, and a CALL on the pool picked as a deadlock victim is
// sent again at most five times in all; then Resolve returns an *Error having stored
// nothing.
func (s *Store) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	return s.pool().resolve(ctx, p)
}

// String describes the store for logs, without credentials.
func (s *Store) String() string { return fmt.Sprintf("mysqlstore(%s)", s.cfg.table) }

package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/claimmix"
)

// Default names and limits of a Config.
const (
	DefaultSchema         = "public"
	DefaultTable          = "once_records"
	DefaultLockTimeout    = 5 * time.Second
	DefaultSweepBatchSize = 1000
)

// Config configures a Store. A nil *Config means defaults; so
// does the zero value of each field.
type Config struct {
	// Schema is the schema that holds the records table. It must be a plain
	// identifier: letters, digits and underscores, not starting with a
	// digit, at most 63 bytes. Defaults to "public".
	Schema string

	// Table is the name of the records table. Migrate also creates
	// <Table>_migrations and the index <Table>_held_idx (held rows only)
	// in Schema. Same rules as Schema, at most 52 bytes. Defaults to
	// "once_records".
	Table string

	// LockTimeout bounds how long a Claim or a Resolve waits for a
	// concurrent, uncommitted transaction that holds the same key (a claim
	// made in a transaction by once.DoTx, not yet committed) before reporting the
	// key in progress. It applies to the Store's own statements as well as
	// to those of InTx, holding a pool connection at most that long. It is
	// rounded up to whole milliseconds (never to 0, which PostgreSQL reads
	// as no timeout) and saturates at the server's maximum, about 24.8
	// days. A Claim that sends its insert first may wait 1 ms more: that
	// insert gives up after 1 ms, then the Claim reads the row and, when it
	// sees none, inserts again waiting at most LockTimeout (see
	// Store.Claim). Defaults to 5 seconds.
	LockTimeout time.Duration

	// SweepBatchSize is the most expired rows Sweep deletes per
	// statement (each statement also reads at most 128 heap pages).
	// Defaults to 1000.
	SweepBatchSize int

	// SingleConnection makes the Store run one statement at a time, for a
	// DB that wraps a single connection (a *pgx.Conn is detected without
	// it). Concurrent calls then queue for the connection: a Claim that
	// waits for a concurrent uncommitted transaction (at most LockTimeout)
	// delays every other call of the Store, and a Store shares its
	// connection with nothing else, and BeginTx refuses to begin a transaction.
	// Defaults to false: the DB is safe for concurrent use.
	SingleConnection bool

	// OnSweepError is called by RunSweeper with each error of a sweep; the
	// next tick tries again. Defaults to ignoring the error.
	OnSweepError func(error)
}

// resolved is a validated Config with its defaults applied.
type resolved struct {
	schema, table    string
	lockTimeout      time.Duration
	sweepBatchSize   int
	onSweepError     func(error)
	singleConnection bool
}

func resolveConfig(cfg *Config) (resolved, error) {
	r := resolved{
		schema:         DefaultSchema,
		table:          DefaultTable,
		lockTimeout:    DefaultLockTimeout,
		sweepBatchSize: DefaultSweepBatchSize,
		onSweepError:   func(error) {},
	}
	if cfg != nil {
		if cfg.Schema != "" {
			r.schema = cfg.Schema
		}
		if cfg.Table != "" {
			r.table = cfg.Table
		}
		if cfg.LockTimeout > 0 {
			r.lockTimeout = cfg.LockTimeout
		}
		if cfg.SweepBatchSize > 0 {
			r.sweepBatchSize = cfg.SweepBatchSize
		}
		if cfg.OnSweepError != nil {
			r.onSweepError = cfg.OnSweepError
		}
		r.singleConnection = cfg.SingleConnection
	}
	if err := validateIdentifier("Schema", r.schema, maxIdentifierLen); err != nil {
		return resolved{}, err
	}
	if err := validateIdentifier("Table", r.table, maxTableLen); err != nil {
		return resolved{}, err
	}
	return r, nil
}

// qualifiedTable returns the quoted schema-qualified records table.
func (r resolved) qualifiedTable() string { return pgx.Identifier{r.schema, r.table}.Sanitize() }

// Store is the PostgreSQL backend. It is safe for concurrent use. The zero
// value is not usable; call New.
type Store struct {
	db     querier // the caller's DB, or a serialDB over it
	conn   DB      // the caller's DB, for Migrate
	txdb   DB      // the caller's DB, for BeginTx; nil for a single connection
	cfg    resolved
	sql    statements
	listen *listener     // nil when the DB cannot lend a connection
	mix    *claimmix.Mix // whether Claim sends its insert or its read first
}

var _ backends.Store = (*Store)(nil)

// New returns a Store over db, usually a *pgxpool.Pool (see DB for a
// *pgx.Conn or a wrapper), which the caller keeps owning: the Store never
// closes it. The records table must exist (see Migrate). New checks cfg and
// returns an *IdentifierError for an invalid schema or table name, and
// ErrTxAsDB for a pgx.Tx; it does not contact the server.
func New(db DB, cfg *Config) (*Store, error) {
	r, err := resolveConfig(cfg)
	if err != nil {
		return nil, err
	}
	single, err := checkDB(db, r)
	if err != nil {
		return nil, err
	}
	var q querier = db
	txdb := db
	if single {
		q, txdb = &serialDB{db: db}, nil
	}
	return &Store{
		db:     q,
		conn:   db,
		txdb:   txdb,
		cfg:    r,
		sql:    newStatements(r.qualifiedTable(), r.lockTimeout),
		listen: newListener(db, single, r.qualifiedTable()),
		mix:    claimmix.New(claimmix.Even),
	}, nil
}

// Close stops waiting without polling: it ends the connection Watch
// listens on (see Watch), if any, and returns once the goroutines that
// serve it have done their last work; each then exits at once, so a
// goroutine leak check that retries briefly, as go.uber.org/goleak's
// does, passes right after Close (a stack dump taken at the instant Close
// returns may still show one returning). Without Close the connection and
// its goroutine stay up to 5 s after the last waiter left. Waiters are woken, as by a lost connection;
// a Watch in progress and every later Watch return an *Error that wraps
// backends.ErrClosed, and the core then waits by polling (a Store whose DB
// lends no connection keeps returning ErrWatchUnsupported: it has no
// listener to close). Close does not
// close the DB, which the caller owns, and every other method keeps
// working on it. Close is safe to call more than once and concurrently
// with Watch; it returns nil.
func (s *Store) Close() error {
	if s.listen != nil {
		s.listen.close()
	}
	return nil
}

// querier is what the statements run on: a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Claim implements backends.Store with two plain statements, in the order
// its recent claims make likelier to need one: the INSERT … ON CONFLICT DO
// NOTHING of a hand-written idempotency table (insert_claim.sql), and an
// indexed read of the key's row (read_claim.sql). While fewer than about
// half the Store's recent claims met a row (claimmix.Even), the insert
// goes first, and the read follows only when it inserted nothing; while
// more did, the read goes first, and the insert follows only when it saw
// no row. Either way the claim that guessed right takes one statement, the
// other two (two round trips), and a replay, an in-progress and a mismatch
// lock and write nothing. A new Store reads first until a claim inserts a
// new key. Three rare cases take one statement more (takeover.sql):
// taking over a pending record whose lease lapsed, re-using a
// record that expired but was not swept yet, and a key whose row a
// concurrent session committed after the read's snapshot, or deleted
// after the insert's conflict. That
// statement runs again, on a fresh snapshot, when it too loses a
// race with a concurrent commit of the key: at most four times in all
// (maxAttempts) in each run of the Claim (a held key can make the Claim
// run again, as below: at most 4 runs of at most 4); when every attempt
// lost, Claim returns an *Error ("key
// changed concurrently on every attempt; retry"), having claimed nothing,
// and the core's Do fails closed with it (fn does not run).
//
// A Claim that takes a record over, or re-sends its owner's claim, gets the
// record's checkpoints (ClaimResult.Steps) from the statement that reads
// its row; a
// replay, an in-progress and a mismatch never read them out.
//
// A Claim that waited LockTimeout for a concurrent uncommitted transaction
// holding the key reports it pending (see Config.LockTimeout). An insert
// that goes first waits at most 1 ms for a transaction that wrote the
// key's row (also one that only leased a held record, whose committed
// version answers the claim): then the Claim reads first, as above.
//
// A key found held takes one more statement, which reads the hold's
// details (see backends.Store.Hold). When that read finds the hold and the
// reconciler's lease ended, or the record no longer held (it changed
// between the two statements), the Claim runs again, at most four times in
// all (maxAttempts). After the fourth run Claim reports what it found
// even then: the held record as read, possibly one whose hold and lease
// ended (one it could have taken over), or, when the read found it no
// longer held, the held record the Claim's statement reported, without
// its hold's details (Held zero). It claims nothing then; the core answers
// an *InProgressError (Held), which the caller retries.
func (s *Store) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := claimLoop(ctx, p, func(ctx context.Context) (fastRow, error) {
			var r fastRow
			var err error
			if attempt == 1 && s.mix.CreateFirst() {
				r, err = s.sql.insertFirst(ctx, s.db, p)
			} else {
				r, err = s.sql.readFirst(ctx, s.db, p)
			}
			if err == nil {
				recordClaim(s.mix, r)
			}
			return r, err
		}, func(ctx context.Context) (claimRow, error) {
			return s.sql.claimOnce(ctx, s.db, p)
		})
		if err != nil {
			return res, err
		}
		again, err := s.heldAgain(ctx, s.db, p.Scope, p.Key, p.Fingerprint, &res.Existing, attempt, claimable)
		if !again {
			return res, err
		}
	}
}

// claimable reports, for heldAgain, a held record that a Claim with
// fingerprint fp takes over: its hold and reconciler lease ended, its
// fingerprint matches.
func claimable(rec backends.Record, fp []byte) bool {
	return rec.Held.Remaining <= 0 && rec.LeaseRemaining <= 0 && backends.FingerprintMatches(rec.Fingerprint, fp)
}

// resolvable reports, for heldAgain, a held record that a Resolve with
// fingerprint fp resolves: no live reconciler lease, a matching
// fingerprint.
func resolvable(rec backends.Record, fp []byte) bool {
	return rec.LeaseRemaining <= 0 && backends.FingerprintMatches(rec.Fingerprint, fp)
}

// heldAgain reads the hold's details into rec (heldDetails, on q) when
// rec, the record attempt number attempt of a Claim or Resolve reported,
// is held.
// It reports that the caller must run again (attempt < maxAttempts) when
// that read finds the record no longer held, or held but takeable by the
// caller (takeable(rec, fp), fp the caller's fingerprint): the lease or
// hold that kept the caller from applying ended in between.
func (s *Store) heldAgain(ctx context.Context, q querier, scope, key string, fp []byte, rec *backends.Record, attempt int, takeable func(backends.Record, []byte) bool) (bool, error) {
	if rec.State != backends.StateHeld {
		return false, nil
	}
	held, err := s.heldDetails(ctx, q, scope, key, rec)
	return err == nil && (!held || takeable(*rec, fp)) && attempt < maxAttempts, err
}

// Complete implements backends.Store in one statement.
func (s *Store) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	return s.sql.complete(ctx, s.db, p)
}

// Renew implements backends.Store in one statement.
func (s *Store) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	return s.sql.renew(ctx, s.db, p)
}

// Release implements backends.Store in one statement, which deletes a
// record without checkpoints and ends the lease of one with checkpoints,
// waking the key's waiters either way.
func (s *Store) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	return s.sql.release(ctx, s.db, p)
}

// Checkpoint implements backends.Store in one statement, fenced as Renew
// is. It wakes no waiter: a checkpoint changes no answer a duplicate gets.
func (s *Store) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	return s.sql.checkpoint(ctx, s.db, p)
}

// Resolve implements backends.Store in one statement. Like Claim, it runs
// it again on a fresh snapshot when it races with a concurrent commit of
// the same key, at most four times in all, and then returns an *Error
// ("key changed concurrently on every attempt; retry") having stored
// nothing; and it waits at most LockTimeout for an uncommitted transaction
// holding the key.
//
// A key found held takes one more statement, as in Claim, and Resolve
// runs again when that read finds no live reconciler lease, or no held
// record: at most four times in all, as Claim, after which it reports the
// held record found, without resolving it.
func (s *Store) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := resolveLoop(ctx, p, func(ctx context.Context) (resolveRow, error) {
			return s.sql.resolveOnce(ctx, s.db, p)
		})
		if err != nil {
			return res, err
		}
		again, err := s.heldAgain(ctx, s.db, p.Scope, p.Key, p.Fingerprint, &res.Existing, attempt, resolvable)
		if !again {
			return res, err
		}
	}
}

// nonNil returns b, or an empty slice for nil, so that pgx sends an empty
// bytea instead of NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/stagedoor/once/backends"
)

// Defaults of Options.
const (
	DefaultTable          = "once_records"
	DefaultBusyTimeout    = 5 * time.Second
	DefaultSweepBatchSize = 1000
	DefaultReaders        = 4
)

// MaxBusyTimeout is the longest BusyTimeout, about 24.8 days: SQLite takes
// the busy timeout as a 32-bit count of milliseconds. A longer one is
// clamped to it.
const MaxBusyTimeout = math.MaxInt32 * time.Millisecond

// Options configures Open. A nil *Options means defaults; so does the zero
// value of each field.
type Options struct {
	// Table is the name of the records table. ASCII letters, digits and
	// underscores, not starting with a digit, at most 48 bytes. Defaults
	// to "once_records". Like every SQLite identifier it ignores ASCII
	// case: "Orders" and "orders" name one table (with one index and one
	// versions table), so Stores given either share their records.
	Table string

	// Now is the store's clock (see the package doc). Defaults to
	// time.Now. Tests may pass a fake one; every process that opens the
	// file must use the same clock.
	Now func() time.Time

	// Synchronous is SQLite's synchronous setting: "FULL" (the default:
	// an acknowledged write survives power loss) or "NORMAL" (faster; it
	// survives a crash of the process, not always one of the machine).
	Synchronous string

	// BusyTimeout bounds how long a write waits for another connection's
	// write lock — another process's, since this Store's writes are
	// serialised — and how long Open (Migrate) retries while another
	// process is creating the file or switching it to WAL mode. Counted
	// in whole milliseconds (a positive value below one is one), at most
	// MaxBusyTimeout (a longer one is clamped). Defaults to 5 seconds.
	BusyTimeout time.Duration

	// Readers is the number of read connections, which serve replays,
	// duplicates and Get in parallel with the one writer. Defaults to 4.
	Readers int

	// SweepBatchSize is the number of expired rows Sweep deletes per
	// statement. Defaults to 1000.
	SweepBatchSize int

	// OnSweepError is called by RunSweeper with each error of a sweep; the
	// next tick tries again. Defaults to ignoring the error.
	OnSweepError func(error)
}

// Store is the SQLite backend. It is safe for concurrent use. The zero
// value is not usable; call Open.
type Store struct {
	writer, reader *sql.DB
	table          string
	sql            statements
	now            func() time.Time
	sweepBatchSize int
	onSweepError   func(error)
	busyTimeout    time.Duration
	watch          watchers

	closeOnce sync.Once
	closeErr  error
}

var (
	_ backends.Store   = (*Store)(nil)
	_ backends.Admin   = (*Store)(nil)
	_ backends.Watcher = (*Store)(nil)
)

// Open opens (creating it if needed) the database file at path, puts it in
// WAL mode and migrates it (see Migrate). The Store owns the file's
// connections: Close it when done. Open returns an *OptionsError for
// invalid options, and an *Error when the file cannot be opened or
// migrated.
//
// The path is a file name, never a SQLite URI: "file:x.db" creates a file
// named exactly "file:x.db", and "?", "#" and "%" are part of the name, so
// no URI parameter (mode=memory, cache=shared, ...) reaches SQLite. The
// path ":memory:" is refused with an *OptionsError of Field "path": each of
// the Store's connections would have its own empty in-memory database, so
// every operation would fail. For a store in memory use the memory backend;
// for tests, a file in a temporary directory.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	o, err := resolveOptions(path, opts)
	if err != nil {
		return nil, err
	}
	s := &Store{
		table:          o.table,
		sql:            newStatements(o.table),
		now:            o.now,
		sweepBatchSize: o.sweepBatchSize,
		onSweepError:   o.onSweepError,
		busyTimeout:    o.busyTimeout,
	}
	base := "file:" + escapePath(path) + "?_txlock=immediate" +
		"&_pragma=busy_timeout(" + fmt.Sprint(o.busyTimeout.Milliseconds()) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(" + o.synchronous + ")"
	if s.writer, err = sql.Open("sqlite", base); err != nil {
		return nil, interpretError("open", err)
	}
	s.writer.SetMaxOpenConns(1) // one writer: writes queue in the pool, never on SQLITE_BUSY
	s.writer.SetMaxIdleConns(1)
	s.writer.SetConnMaxIdleTime(0)
	s.writer.SetConnMaxLifetime(0)
	if err := s.Migrate(ctx); err != nil {
		_ = s.writer.Close()
		return nil, err
	}
	if s.reader, err = sql.Open("sqlite", base+"&_pragma=query_only(1)"); err != nil {
		_ = s.writer.Close()
		return nil, interpretError("open", err)
	}
	s.reader.SetMaxOpenConns(o.readers)
	s.reader.SetMaxIdleConns(o.readers)
	return s, nil
}

// Close closes the file's connections; operations after Close fail with an
// *Error that wraps backends.ErrClosed. Close is idempotent. A claim still
// pending at Close stays in the file and is taken over after its lease by
// the next process, as after a crash.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.watch.closeAll()
		rerr := s.reader.Close()
		werr := s.writer.Close()
		if werr == nil {
			werr = rerr
		}
		if werr != nil {
			s.closeErr = interpretError("close", werr)
		}
	})
	return s.closeErr
}

// options is a validated Options with its defaults applied.
type options struct {
	table, synchronous string
	now                func() time.Time
	busyTimeout        time.Duration
	readers            int
	sweepBatchSize     int
	onSweepError       func(error)
}

// OptionsError reports an argument of Open that it refuses.
type OptionsError struct {
	// Field is "path", "Table" or "Synchronous".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *OptionsError) Error() string {
	return "once/sqlite: invalid " + e.Field + ": " + e.Reason
}

// maxTableLen leaves room for the derived names' suffixes.
const maxTableLen = 48

func resolveOptions(path string, opts *Options) (options, error) {
	o := options{
		table:          DefaultTable,
		synchronous:    "FULL",
		now:            time.Now,
		busyTimeout:    DefaultBusyTimeout,
		readers:        DefaultReaders,
		sweepBatchSize: DefaultSweepBatchSize,
		onSweepError:   func(error) {},
	}
	if path == "" {
		return options{}, &OptionsError{Field: "path", Reason: "empty"}
	}
	if strings.ContainsRune(path, 0) {
		return options{}, &OptionsError{Field: "path", Reason: "contains a NUL byte"}
	}
	if path == ":memory:" {
		return options{}, &OptionsError{Field: "path", Reason: `":memory:" is refused: each of the Store's connections would have its own empty database; use a file (in a temporary directory for tests)`}
	}
	if opts != nil {
		if opts.Table != "" {
			o.table = opts.Table
		}
		if opts.Now != nil {
			o.now = opts.Now
		}
		if opts.Synchronous != "" {
			o.synchronous = strings.ToUpper(opts.Synchronous)
		}
		if opts.BusyTimeout > 0 {
			o.busyTimeout = min(max(opts.BusyTimeout, time.Millisecond), MaxBusyTimeout)
		}
		if opts.Readers > 0 {
			o.readers = opts.Readers
		}
		if opts.SweepBatchSize > 0 {
			o.sweepBatchSize = opts.SweepBatchSize
		}
		if opts.OnSweepError != nil {
			o.onSweepError = opts.OnSweepError
		}
	}
	if o.synchronous != "FULL" && o.synchronous != "NORMAL" {
		return options{}, &OptionsError{Field: "Synchronous", Reason: fmt.Sprintf("%q is neither FULL nor NORMAL", o.synchronous)}
	}
	if reason := identifierProblem(o.table); reason != "" {
		return options{}, &OptionsError{Field: "Table", Reason: fmt.Sprintf("%q: %s", o.table, reason)}
	}
	return o, nil
}

func identifierProblem(name string) string {
	if len(name) > maxTableLen {
		return fmt.Sprintf("longer than %d bytes", maxTableLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9':
			if i == 0 {
				return "starts with a digit"
			}
		default:
			return "only ASCII letters, digits and underscores are allowed"
		}
	}
	return ""
}

// escapePath escapes the characters that end or escape the path part of
// a SQLite URI filename.
func escapePath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// nowMicros is the store's clock in Unix microseconds.
func (s *Store) nowMicros() int64 { return s.now().UnixMicro() }

// String describes the store for logs.
func (s *Store) String() string { return "sqlitestore(" + s.table + ")" }

package sqlitestore

import (
	"database/sql"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/stagedoor/once/backends"
)

// Defaults of Config.
const (
	DefaultTable          = "once_records"
	DefaultLockTimeout    = 5 * time.Second
	DefaultSweepBatchSize = 1000
	DefaultReaders        = 4
)

// MaxLockTimeout is the longest LockTimeout, about 24.8 days: SQLite takes
// the busy timeout as a 32-bit count of milliseconds. A longer one is
// clamped to it.
const MaxLockTimeout = math.MaxInt32 * time.Millisecond

// Config configures a Store. A nil *Config means defaults; so does the
// zero value of each field.
type Config struct {
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

	// LockTimeout bounds how long a write waits for another connection's
	// write lock — another process's, since this Store's writes are
	// serialised — and how long Migrate retries while another
	// process is creating the file or switching it to WAL mode. Counted
	// in whole milliseconds (a positive value below one is one), at most
	// MaxLockTimeout (a longer one is clamped). Defaults to 5 seconds.
	LockTimeout time.Duration

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
// value is not usable; call New.
type Store struct {
	writer, reader *sql.DB
	table          string
	sql            statements
	now            func() time.Time
	sweepBatchSize int
	onSweepError   func(error)
	lockTimeout    time.Duration
	watch          watchers

	closeOnce sync.Once
	closeErr  error
}

var (
	_ backends.Store   = (*Store)(nil)
	_ backends.Admin   = (*Store)(nil)
	_ backends.Watcher = (*Store)(nil)
)

// New returns a Store over the database file at path, which the first
// statement creates if needed and puts in WAL mode. It only checks cfg
// (a *ConfigError for an invalid field) and sends nothing: call Migrate
// before the first operation. The Store owns the file's connections:
// Close it when done.
//
// The path is a file name, never a SQLite URI: "file:x.db" creates a file
// named exactly "file:x.db", and "?", "#" and "%" are part of the name, so
// no URI parameter (mode=memory, cache=shared, ...) reaches SQLite. The
// path ":memory:" is refused with a *ConfigError of Field "path": each of
// the Store's connections would have its own empty in-memory database, so
// every operation would fail. For a store in memory use the memory backend;
// for tests, a file in a temporary directory.
func New(path string, cfg *Config) (*Store, error) {
	o, err := resolveConfig(path, cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{
		table:          o.table,
		sql:            newStatements(o.table),
		now:            o.now,
		sweepBatchSize: o.sweepBatchSize,
		onSweepError:   o.onSweepError,
		lockTimeout:    o.lockTimeout,
	}
	base := "file:" + escapePath(path) + "?_txlock=immediate" +
		"&_pragma=busy_timeout(" + fmt.Sprint(o.lockTimeout.Milliseconds()) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(" + o.synchronous + ")"
	if s.writer, err = sql.Open("sqlite", base); err != nil {
		return nil, interpretError("open", err)
	}
	s.writer.SetMaxOpenConns(1) // one writer: writes queue in the pool, never on SQLITE_BUSY
	s.writer.SetMaxIdleConns(1)
	s.writer.SetConnMaxIdleTime(0)
	s.writer.SetConnMaxLifetime(0)
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

// options is a validated Config with its defaults applied.
type options struct {
	table, synchronous string
	now                func() time.Time
	lockTimeout        time.Duration
	readers            int
	sweepBatchSize     int
	onSweepError       func(error)
}

// ConfigError reports an argument of New that it refuses.
type ConfigError struct {
	// Field is "path", "Table" or "Synchronous".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return "once/sqlite: invalid " + e.Field + ": " + e.Reason
}

// maxTableLen leaves room for the derived names' suffixes.
const maxTableLen = 48

func resolveConfig(path string, cfg *Config) (options, error) {
	o := options{
		table:          DefaultTable,
		synchronous:    "FULL",
		now:            time.Now,
		lockTimeout:    DefaultLockTimeout,
		readers:        DefaultReaders,
		sweepBatchSize: DefaultSweepBatchSize,
		onSweepError:   func(error) {},
	}
	if path == "" {
		return options{}, &ConfigError{Field: "path", Reason: "empty"}
	}
	if strings.ContainsRune(path, 0) {
		return options{}, &ConfigError{Field: "path", Reason: "contains a NUL byte"}
	}
	if path == ":memory:" {
		return options{}, &ConfigError{Field: "path", Reason: `":memory:" is refused: each of the Store's connections would have its own empty database; use a file (in a temporary directory for tests)`}
	}
	if cfg != nil {
		if cfg.Table != "" {
			o.table = cfg.Table
		}
		if cfg.Now != nil {
			o.now = cfg.Now
		}
		if cfg.Synchronous != "" {
			o.synchronous = strings.ToUpper(cfg.Synchronous)
		}
		if cfg.LockTimeout > 0 {
			o.lockTimeout = min(max(cfg.LockTimeout, time.Millisecond), MaxLockTimeout)
		}
		if cfg.Readers > 0 {
			o.readers = cfg.Readers
		}
		if cfg.SweepBatchSize > 0 {
			o.sweepBatchSize = cfg.SweepBatchSize
		}
		if cfg.OnSweepError != nil {
			o.onSweepError = cfg.OnSweepError
		}
	}
	if o.synchronous != "FULL" && o.synchronous != "NORMAL" {
		return options{}, &ConfigError{Field: "Synchronous", Reason: fmt.Sprintf("%q is neither FULL nor NORMAL", o.synchronous)}
	}
	if reason := identifierProblem(o.table); reason != "" {
		return options{}, &ConfigError{Field: "Table", Reason: fmt.Sprintf("%q: %s", o.table, reason)}
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

package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/stagedoor/once/backends"
)

// Error is every error the Store returns when it could not reach a
// decision: SQLite refused a statement, the file could not be opened, the
// Store was closed, the context ended, or a parameter was one no call may
// send (see "Inputs" in package backends: a scope or key that is empty,
// too long, invalid UTF-8 or has a control character, an empty or too
// long owner token, a too long fingerprint; its message starts "invalid
// input: " and names the field, never the value). It carries SQLite's
// result code but not its message. When the context ended, errors.Is(err,
// context.Canceled) or errors.Is(err, context.DeadlineExceeded) holds;
// after Close, errors.Is(err, backends.ErrClosed) does.
type Error struct {
	// Op is the operation that failed: "open", "migrate", "claim",
	// "complete", "renew", "release", "resolve", "hold", "leaseheld",
	// "list", "count", "sweep", "get", "delete", "watch" or "close", or
	// a transaction's (BeginTx) "begin", "savepoint", "rollback to
	// savepoint", "commit" or "rollback".
	Op string
	// Code is SQLite's extended result code, or 0 when the error did not
	// come from SQLite.
	Code int

	kind  string
	cause error
}

// Error implements error.
func (e *Error) Error() string {
	msg := "once/sqlite: " + e.Op + ": " + e.kind
	if e.Code != 0 {
		if name, ok := sqlite.ErrorCodeString[e.Code]; ok {
			msg += " (" + name + ")"
		}
	}
	return msg
}

// Unwrap returns the context error or backends.ErrClosed behind e, if any.
func (e *Error) Unwrap() error { return e.cause }

// interpretError is the one place where driver errors are translated; nil
// stays nil. No driver value is reachable from the result.
func interpretError(op string, err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	e := &Error{Op: op}
	var sqErr *sqlite.Error
	switch {
	case errors.Is(err, context.Canceled):
		e.kind, e.cause = "context canceled", context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		e.kind, e.cause = "context deadline exceeded", context.DeadlineExceeded
	case errors.Is(err, sql.ErrConnDone) || err.Error() == "sql: database is closed":
		e.kind, e.cause = "store closed", backends.ErrClosed
	case errors.As(err, &sqErr):
		e.Code = sqErr.Code()
		switch e.Code & 0xff {
		case sqlite3.SQLITE_BUSY:
			e.kind = "database busy (another process holds the write lock)"
		case sqlite3.SQLITE_INTERRUPT:
			e.kind = "interrupted"
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			e.kind = "database file is corrupt or not a database"
		case sqlite3.SQLITE_CANTOPEN:
			e.kind = "cannot open the database file"
		case sqlite3.SQLITE_READONLY:
			e.kind = "database is read-only"
		case sqlite3.SQLITE_FULL:
			e.kind = "disk full"
		default:
			e.kind = "SQLite error"
		}
	default:
		e.kind = "driver error"
	}
	return e
}

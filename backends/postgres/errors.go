package postgres

import (
	"context"
	"errors"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/connreason"
)

// SQLSTATE codes a caller may want to test Error.Code against.
const (
	// CodeLockNotAvailable (55P03) is lock_timeout expiring.
	CodeLockNotAvailable = "55P03"
	// CodeSerializationFailure (40001) is a conflict in a REPEATABLE READ or
	// SERIALIZABLE transaction: retry the whole transaction.
	CodeSerializationFailure = "40001"
	// CodeUndefinedTable (42P01) usually means Migrate was not run.
	CodeUndefinedTable = "42P01"
)

// Error is every error the Store returns when it could not reach a decision:
// the server refused a statement, the connection failed, the context
// ended, or a parameter was one no call may send (see "Inputs" in package
// backends; its message starts "invalid input: " and names the field,
// never the value, and no statement was sent). It carries the SQLSTATE
// but none of the server's message, which may quote stored values; a
// failed connection says why in words of its own ("cannot connect:
// connection refused", "host not found", "password authentication
// failed"), which quote no host, user or password. When
// the context ended, errors.Is(err, context.Canceled) or errors.Is(err,
// context.DeadlineExceeded) holds.
type Error struct {
	// Op is the operation that failed: "claim", "complete", "renew",
	// "release", "checkpoint", "resolve", "hold", "leaseheld", "sweep", "migrate",
	// Admin's "get" and "delete", a transaction's (BeginTx) "begin",
	// "savepoint", "rollback to savepoint", "commit" and "rollback", or
	// Watch's "watch".
	Op string
	// Code is the SQLSTATE reported by the server, or empty when the error
	// did not come from the server.
	Code string
	// Constraint names the violated constraint, if any.
	Constraint string

	kind  string // what went wrong, in words free of data
	cause error  // a context error, backends.ErrClosed, backends.ErrTxRolledBack, or nil
}

// Error implements error.
func (e *Error) Error() string {
	msg := "once/postgres: " + e.Op + ": " + e.kind
	if e.Code != "" {
		msg += " (SQLSTATE " + e.Code + ")"
	}
	if e.Constraint != "" {
		msg += " on constraint " + e.Constraint
	}
	return msg
}

// Unwrap returns context.Canceled or context.DeadlineExceeded when the
// operation ended with its context, backends.ErrClosed when it was a Watch
// after (or interrupted by) Store.Close, backends.ErrTxRolledBack for a
// serialization failure (CodeSerializationFailure), and nil otherwise.
func (e *Error) Unwrap() error { return e.cause }

// errContention reports that a statement lost the race with concurrent
// commits of the same key on every attempt.
func errContention(op string) error {
	return &Error{Op: op, kind: "key changed concurrently on every attempt; retry"}
}

// interpretError is the one place where driver errors are translated. It
// reports whether a row was found: pgx.ErrNoRows is the state "no row"
// (false, nil); nil is (true, nil). Any other error becomes an *Error that
// keeps the SQLSTATE, the constraint name and, when the context ended, the
// context error; no pgx or pgconn value is reachable from it.
func interpretError(op string, err error) (found bool, _ error) {
	if err == nil {
		return true, nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	e := &Error{Op: op}
	var pgErr *pgconn.PgError
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	switch {
	case errors.Is(err, context.Canceled):
		e.kind, e.cause = "context canceled", context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		e.kind, e.cause = "context deadline exceeded", context.DeadlineExceeded
	case errors.As(err, &connectErr):
		e.kind = "cannot connect"
		if errors.As(err, &pgErr) {
			e.Code = pgErr.Code
		}
		if reason := connectReason(err); reason != "" {
			e.kind += ": " + reason
		}
	case pgconn.Timeout(err):
		e.kind = "network timeout"
	case errors.As(err, &pgErr):
		e.kind, e.Code, e.Constraint = "server error", pgErr.Code, pgErr.ConstraintName
		switch pgErr.Code {
		case CodeLockNotAvailable:
			e.kind = "lock timeout"
		case CodeSerializationFailure:
			e.cause = backends.ErrTxRolledBack
		case CodeUndefinedTable:
			e.kind = "records table missing: run Store.Migrate"
		}
	case errors.As(err, &netErr):
		e.kind = "network error"
	default:
		e.kind = "driver error"
	}
	return false, e
}

// connectReason says why a connection failed, in words free of data (no
// host, address, user or password, which the driver's message quotes), or
// "" when it cannot tell.
func connectReason(err error) string {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case "28P01":
			return "password authentication failed"
		case "28000":
			return "the server refused this role or client (pg_hba.conf)"
		case "3D000":
			return "database does not exist"
		case "53300":
			return "too many connections"
		case "57P03":
			return "the server is starting up or shutting down"
		}
		return "the server refused the connection"
	case pgconn.Timeout(err):
		return "timed out"
	}
	return connreason.Of(err)
}

// code returns the SQLSTATE of an error returned by interpretError.
func code(err error) string {
	if err == nil {
		return "" // before e, which escapes to errors.As: no allocation
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

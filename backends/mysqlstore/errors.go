package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/stagedoor/once/backends"
)

// Server error numbers a caller may want to test Error.Code against.
const (
	// CodeLockWaitTimeout (1205): a write (Complete, Renew, Release,
	// Delete, Sweep) waited Config.LockTimeout for a row lock held by
	// another transaction and gave up; nothing changed. A claim or a
	// Resolve reports the key in progress instead.
	CodeLockWaitTimeout uint16 = 1205
	// CodeDeadlock (1213): InnoDB rolled back the whole transaction to break
	// a deadlock; retry the transaction.
	CodeDeadlock uint16 = 1213
	// CodeNoSuchTable (1146) usually means Migrate was not run.
	CodeNoSuchTable uint16 = 1146
	// CodeNoSuchProcedure (1305) usually means Migrate was not run.
	CodeNoSuchProcedure uint16 = 1305
	// CodeSignal (1644) is the procedures' own signal: the key changed
	// concurrently on every attempt.
	CodeSignal uint16 = 1644
)

// Error is every error the Store returns when it could not reach a
// decision: the server refused a statement, the connection failed, the
// context ended, or the session is unfit (ErrSession). It carries the
// server's error number and SQLSTATE but none of its message, which may
// quote stored values. When the context ended,
// errors.Is(err, context.Canceled) or errors.Is(err,
// context.DeadlineExceeded) holds.
type Error struct {
	// Op is the operation that failed: "claim", "complete", "renew",
	// "release", "resolve", "sweep", "migrate", Admin's "get" and "delete",
	// or a transaction's (BeginTx) "begin", "savepoint", "rollback to
	// savepoint", "commit" or "rollback".
	Op string
	// Code is the server's error number, or 0 when the error did not come
	// from the server.
	Code uint16
	// SQLState is the server's SQLSTATE, or empty.
	SQLState string

	kind  string // what went wrong, in words free of data
	cause error  // a context error or ErrClosed, or nil
}

// Error implements error.
func (e *Error) Error() string {
	msg := "once/mysql: " + e.Op + ": " + e.kind
	if e.Code != 0 {
		msg += " (error " + strconv.Itoa(int(e.Code))
		if e.SQLState != "" {
			msg += ", SQLSTATE " + e.SQLState
		}
		msg += ")"
	}
	return msg
}

// Unwrap returns context.Canceled, context.DeadlineExceeded,
// backends.ErrClosed or ErrSession when the operation ended for that
// reason, backends.ErrTxRolledBack for a deadlock (CodeDeadlock), and nil
// otherwise.
func (e *Error) Unwrap() error { return e.cause }

// interpretError is the one place where driver errors are translated. It
// reports whether a row was found: sql.ErrNoRows is the state "no row"
// (false, nil); nil is (true, nil). Any other error becomes an *Error that
// keeps the error number and SQLSTATE and, when the context ended, the
// context error; no driver value is reachable from it.
func interpretError(op string, err error) (found bool, _ error) {
	if err == nil {
		return true, nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	var already *Error
	if errors.As(err, &already) {
		return false, err
	}
	e := &Error{Op: op}
	var myErr *mysql.MySQLError
	var netErr net.Error
	switch {
	case errors.Is(err, context.Canceled):
		e.kind, e.cause = "context canceled", context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		e.kind, e.cause = "context deadline exceeded", context.DeadlineExceeded
	case errors.As(err, &myErr):
		e.kind, e.Code, e.SQLState = serverKind(myErr), myErr.Number, string(myErr.SQLState[:])
		if e.Code == CodeDeadlock {
			e.cause = backends.ErrTxRolledBack
		}
		if strings.Trim(e.SQLState, "\x00") == "" {
			e.SQLState = ""
		}
	case err.Error() == "sql: database is closed": // database/sql's unexported errDBClosed
		e.kind, e.cause = "the *sql.DB is closed", errClosed
	case errors.Is(err, sql.ErrConnDone), errors.Is(err, sql.ErrTxDone):
		e.kind = "connection or transaction already closed"
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn):
		e.kind = "connection lost"
	case errors.As(err, &netErr) && netErr.Timeout():
		e.kind = "network timeout"
	case errors.As(err, &netErr):
		e.kind = "network error"
	default:
		e.kind = "driver error"
	}
	return false, e
}

func serverKind(e *mysql.MySQLError) string {
	switch e.Number {
	case CodeLockWaitTimeout:
		return "lock wait timeout"
	case CodeDeadlock:
		return "deadlock; the transaction was rolled back, retry it"
	case CodeNoSuchTable, CodeNoSuchProcedure:
		return "records table or procedure missing; run Migrate"
	case CodeSignal:
		if strings.HasPrefix(e.Message, "once:") {
			return "key changed concurrently on every attempt; retry"
		}
	}
	return "server error"
}

// closedError is the error of an operation on a closed Store.
func closedError(op string) error {
	return &Error{Op: op, kind: "store closed", cause: errClosed}
}

// code returns the server error number of an error from interpretError.
func code(err error) uint16 {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

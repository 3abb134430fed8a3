package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
)

// ErrSession is reachable through errors.Is from the *Error of an operation
// refused because the session the Store runs on would break its guarantees:
// autocommit is off (the DSN sets autocommit=0, or init_connect does), so
// the Store's plain statements would run in a transaction nobody commits;
// the session's timestamp is pinned (the DSN sets timestamp, or SET
// timestamp ran), so UTC_TIMESTAMP(), the clock of every lease, would not
// move; or the session's isolation level is READ UNCOMMITTED (the DSN sets
// tx_isolation or transaction_isolation, or the server's default is), so
// the Store's lock-free reads would see another transaction's uncommitted
// claim or outcome, and answer a duplicate with an outcome that is then
// rolled back. Fix the DSN; the Store does not change session state.
var ErrSession = errors.New("once/mysql: session unfit for the Store")

// sessionQuery reads the session's autocommit, how far its timestamp is
// from the server's clock, and its isolation level (MariaDB's
// @@tx_isolation, MySQL 8's @@transaction_isolation, each in an executable
// comment only its server runs; "" on a server that runs neither).
// SYSDATE() reads the clock when it runs, whatever SET timestamp says
// (unless the server runs with --sysdate-is-now, which makes SYSDATE() an
// alias of NOW() and this check blind to a pinned timestamp).
const sessionQuery = "SELECT @@autocommit, ABS(UNIX_TIMESTAMP(SYSDATE(6)) - @@timestamp),\n" +
	"\tCONCAT('' /*M!, @@tx_isolation */ /*!80000 , @@transaction_isolation */)"

// maxTimestampDrift is how far, in seconds, a session's timestamp may be
// from the server's clock. Within one statement the two differ by the
// statement's run time, microseconds for this one.
const maxTimestampDrift = 1.0

// queryRow is the QueryRowContext of a *sql.DB, *sql.Conn or *sql.Tx.
type queryRow func(ctx context.Context, query string, args ...any) *sql.Row

// checkSession checks, until a check passes once, that the session query
// runs on has autocommit on, an unpinned timestamp and an isolation level
// above READ UNCOMMITTED; every connection of a pool comes from one DSN, so
// one connection's session speaks for all. The level it reads is the
// session's: a level set for one transaction only (SET TRANSACTION, as
// database/sql's TxOptions.Isolation does) shows in no variable.
func (s *Store) checkSession(ctx context.Context, op string, query queryRow) error {
	if s.sessionOK.Load() {
		return nil
	}
	var autocommit int64
	var drift float64
	var isolation string
	if _, err := interpretError(op, query(ctx, sessionQuery).Scan(&autocommit, &drift, &isolation)); err != nil {
		return err
	}
	switch {
	case autocommit != 1:
		return &Error{Op: op, kind: "the session runs with autocommit off (autocommit=0 in the DSN?); the Store needs autocommit on", cause: ErrSession}
	case drift > maxTimestampDrift:
		return &Error{Op: op, kind: "the session's timestamp is pinned (timestamp in the DSN, or SET timestamp); the Store needs the server's clock", cause: ErrSession}
	case isolation == "READ-UNCOMMITTED":
		return &Error{Op: op, kind: "the session runs at READ UNCOMMITTED (tx_isolation or transaction_isolation in the DSN, or the server's default); the Store needs READ COMMITTED or above, or its reads would see uncommitted claims and outcomes", cause: ErrSession}
	}
	s.sessionOK.Store(true)
	return nil
}

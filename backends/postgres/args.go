package postgres

import (
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
	"github.com/stagedoor/once/internal/pgsql"
)

// The hot statements' parameters (a claim's, a completion's) cost one
// allocation with their argument array, where pgx's []any would box each
// string, []byte and int64 above 255 on its own (a pointer to one is
// worse: pgx dereferences it through reflect, copying it again). Each
// parameter is a textArg, byteaArg or int8Arg: one pointer into the
// statement's args struct, which an interface holds without allocating.
// They implement the pgtype interfaces pgx encodes a text, bytea or bigint
// from when it knows the parameter's type (a prepared or described
// statement), and driver.Valuer for when it does not (the simple protocol,
// QueryExecModeExec), so every exec mode sends what the plain values would
// send. A tracer or logger that formats the arguments prints the values
// (String, MarshalJSON), as it would print a string, []byte or int64;
// String cuts a text or bytea past 64 bytes as pgx's tracelog cuts a
// plain string or []byte (its hex), so that a large outcome is never
// logged whole.

type textArg struct{ p *string }

func (a textArg) TextValue() (pgtype.Text, error) { return pgtype.Text{String: *a.p, Valid: true}, nil }

func (a textArg) Value() (driver.Value, error) { return *a.p, nil }

func (a textArg) String() string {
	v := *a.p
	if len(v) <= logCut {
		return v
	}
	n := 0
	for n < logCut {
		_, w := utf8.DecodeRuneInString(v[n:])
		n += w
	}
	if n >= len(v) {
		return v
	}
	return fmt.Sprintf("%s (truncated %d bytes)", v[:n], len(v)-n)
}

func (a textArg) MarshalJSON() ([]byte, error) { return json.Marshal(*a.p) }

// byteaArg is never NULL: nonNil makes a nil slice an empty bytea.
type byteaArg struct{ p *[]byte }

func (a byteaArg) BytesValue() ([]byte, error) { return *a.p, nil }

func (a byteaArg) Value() (driver.Value, error) { return *a.p, nil }

func (a byteaArg) String() string {
	v := *a.p
	if len(v) < logCut {
		return hex.EncodeToString(v)
	}
	return fmt.Sprintf("%x (truncated %d bytes)", v[:logCut], len(v)-logCut)
}

// logCut is where String cuts a long value: pgx's tracelog's limit.
const logCut = 64

func (a byteaArg) MarshalJSON() ([]byte, error) { return json.Marshal(*a.p) }

type int8Arg struct{ p *int64 }

func (a int8Arg) Int64Value() (pgtype.Int8, error) { return pgtype.Int8{Int64: *a.p, Valid: true}, nil }

func (a int8Arg) Value() (driver.Value, error) { return *a.p, nil }

func (a int8Arg) String() string { return strconv.FormatInt(*a.p, 10) }

func (a int8Arg) MarshalJSON() ([]byte, error) { return json.Marshal(*a.p) }

// claimArgs are a claim statement's parameters ($1 scope, $2 key, $3
// fingerprint, $4 owner, $5 lease µs, $6 retention µs, $7 lock_timeout),
// read_claim.sql's ($1 scope, $2 key, $3 owner), and insert_claim.sql's
// row with Scan's argument: one allocation for both statements of a claim.
type claimArgs struct {
	scope, key, owner string
	fp                []byte
	lease, retention  int64
	args              [7]any
	read              [3]any
}

// newClaimArgs returns a claim's parameters, with lockTimeout (boxed once,
// in newStatements or insertLockTimeout) as its lock_timeout.
func newClaimArgs(p backends.ClaimParams, lockTimeout any) *claimArgs {
	a := &claimArgs{
		scope: p.Scope, key: p.Key, owner: p.Owner, fp: nonNil(p.Fingerprint),
		lease: sqlstore.Micros(p.Lease), retention: sqlstore.Micros(p.Retention),
	}
	a.args = [7]any{textArg{&a.scope}, textArg{&a.key}, byteaArg{&a.fp}, textArg{&a.owner}, int8Arg{&a.lease}, int8Arg{&a.retention}, lockTimeout}
	a.read = [3]any{a.args[0], a.args[1], a.args[3]}
	return a
}

// claimArgs returns claim_tx.sql's and takeover.sql's arguments, with
// Config.LockTimeout as their lock_timeout.
func (q statements) claimArgs(p backends.ClaimParams) []any {
	return newClaimArgs(p, q.lockTimeout).args[:]
}

// completeArgs are complete.sql's parameters ($1 scope, $2 key, $3 owner,
// $4 outcome, $5 retention µs, $6 the key's notification slot, below 256:
// boxed without allocating), and its row with Scan's argument.
type completeArgs struct {
	scope, key, owner string
	outcome           []byte
	retention         int64
	args              [6]any
	applied           boolScan
	dest              [1]any
}

func newCompleteArgs(p backends.CompleteParams) *completeArgs {
	a := &completeArgs{
		scope: p.Scope, key: p.Key, owner: p.Owner, outcome: nonNil(p.Outcome),
		retention: sqlstore.Micros(p.Retention),
	}
	a.args = [6]any{textArg{&a.scope}, textArg{&a.key}, textArg{&a.owner}, byteaArg{&a.outcome}, int8Arg{&a.retention}, pgsql.Slot(p.Scope, p.Key)}
	a.dest = [1]any{&a.applied}
	return a
}

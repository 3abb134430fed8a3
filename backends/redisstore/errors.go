package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/connreason"
)

// Kinds of Error, checked with errors.Is. A context error (context.Canceled,
// context.DeadlineExceeded) and backends.ErrClosed are kinds too.
var (
	// ErrUnavailable means Redis could not be reached or the connection
	// failed mid-command: the operation may or may not have been applied.
	ErrUnavailable = errors.New("once/redisstore: redis unavailable")
	// ErrServer means Redis answered with an error reply (for example OOM
	// under noeviction, READONLY, CLUSTERDOWN, or a key of another type).
	ErrServer = errors.New("once/redisstore: redis error reply")
	// ErrCorrupt means a reply or a stored record does not have the shape
	// this package writes: the key was written by something else.
	ErrCorrupt = errors.New("once/redisstore: unexpected record or reply")
	// ErrInvalid means an argument cannot be stored: a scope or key that
	// is empty, longer than backends.MaxScopeLen or MaxKeyLen bytes, or
	// that backends.NameProblem refuses (invalid UTF-8, a control
	// character), an owner token that backends.OwnerProblem refuses
	// (empty on any operation but Resolve, longer than
	// backends.MaxOwnerLen bytes, invalid UTF-8, NUL), a fingerprint
	// longer than backends.MaxFingerprintLen bytes, or a held code or
	// message that backends.HeldProblem refuses (too long, invalid UTF-8,
	// NUL; see "Inputs" in package backends).
	ErrInvalid = errors.New("once/redisstore: invalid argument")
)

// Error is the only error type the Store returns for a failed operation,
// but for List's refusal of its parameters, which is a
// *backends.ListParamsError as on every store. No
// go-redis error escapes: Error keeps the driver's message as text and
// unwraps to its Kind only.
type Error struct {
	// Op is the operation: "claim", "complete", "renew", "release",
	// "checkpoint", "resolve", "hold", "leaseheld", "watch", "new",
	// "version check", "eviction check", or Admin's "get" and "delete".
	Op string
	// Kind is ErrUnavailable, ErrServer, ErrCorrupt, ErrInvalid,
	// backends.ErrClosed, context.Canceled or context.DeadlineExceeded.
	Kind error
	// Detail is the driver's or the server's message, if any.
	Detail string
	// Reason says, for ErrUnavailable, why Redis could not be reached or
	// the connection broke ("connection refused", "host not found", "timed
	// out"...) in words free of data, unlike Detail, which can quote an
	// address; empty when it is not known.
	Reason string
}

// Error implements error.
func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("once/redisstore: %s: %v", e.Op, e.Kind)
	}
	return fmt.Sprintf("once/redisstore: %s: %v: %s", e.Op, e.Kind, e.Detail)
}

// Unwrap returns e.Kind, so errors.Is(err, ErrUnavailable) or
// errors.Is(err, context.Canceled) work.
func (e *Error) Unwrap() error { return e.Kind }

// translate is the one place that turns a go-redis error into an *Error.
// It returns nil for nil. redis.Nil never reaches it: the scripts report
// absent records as states.
func translate(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Op: op, Detail: err.Error()}
	var reply redis.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e.Kind, e.Detail = contextKind(err), ""
	case ctx.Err() != nil:
		// The driver may report an expired deadline as a network timeout.
		e.Kind = ctx.Err()
	case errors.Is(err, backends.ErrClosed):
		// Store.Close: the error says it all.
		e.Kind, e.Detail = backends.ErrClosed, ""
	case errors.Is(err, redis.ErrClosed):
		e.Kind = backends.ErrClosed
	case errors.Is(err, redis.Nil):
		e.Kind = ErrCorrupt
	case errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "ONCECORRUPT"):
		// The scripts' own verdict on a value they did not write.
		e.Kind = ErrCorrupt
	case errors.As(err, &reply):
		e.Kind = ErrServer
	default:
		e.Kind, e.Reason = ErrUnavailable, connreason.Of(err)
	}
	return e
}

func contextKind(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return context.Canceled
}

func corrupt(op, detail string) error {
	return &Error{Op: op, Kind: ErrCorrupt, Detail: detail}
}

func invalid(op, detail string) error {
	return &Error{Op: op, Kind: ErrInvalid, Detail: detail}
}

package oncehttp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// HandlerTx returns next guarded by m in one database transaction, run by
// once.DoTx: begin opens the transaction and returns it with the store
// bound to it (a SQL store's BeginTx: postgres.Store.BeginTx,
// mysqlstore.Store.BeginTx, sqlitestore.Store.BeginTx), and next reaches
// the transaction with Tx. The claim of the key, next's writes through the
// transaction and its stored response commit together or not at all: a
// row next writes exists exactly when its response is stored, and a
// crash or a store failure before the commit leaves neither, so the next
// request with the key runs next again at once, with no lease to wait
// out. The begin's store replaces the Keeper's for these requests;
// m's Config and the Keeper's policy apply.
//
// What a client receives is what Handler's client receives (the package
// documentation), with these differences:
//
//   - A response that is not stored (a 400, a 429, a released 503,
//     SkipStore) rolls next's writes back; so does a held 5xx or a panic,
//     and the key is then committed held, as with Handler.
//   - A response that could not be committed with next's writes (the
//     commit failed, or the store failed to record it) is not sent: the
//     client gets 503 store-unavailable, and its retry with the key gets
//     the stored response if the commit did happen on the server, or runs
//     next again if it did not.
//   - A duplicate that arrives while next runs waits for the transaction
//     at most the store's lock timeout, then gets the stored response, or
//     409 request-in-progress past that time.
//
// A response that outgrows Config.MaxStoredBody streams to its client
// before the commit: keep a transactional handler's responses under it.
// HandlerTx panics if next or begin is nil.
func HandlerTx[X once.Tx](m *Middleware, begin func(context.Context) (X, backends.Store, error), next http.Handler) http.Handler {
	if begin == nil {
		panic("oncehttp: nil begin")
	}
	return m.guard(next, func(ctx context.Context, scope once.Scope, key string, fp once.Fingerprint, fn func(context.Context) (storedResponse, error)) (once.Outcome[storedResponse], error) {
		return once.DoTxOutcome(ctx, scope, key, fp, begin, func(ctx context.Context, tx X) (storedResponse, error) {
			return fn(context.WithValue(ctx, txKey{}, tx))
		})
	})
}

type txKey struct{}

// Tx returns the transaction of the request whose context is ctx (the
// handler's r.Context()) under HandlerTx, and false elsewhere or when the
// transaction is not an X. X is the transaction type of the store's
// BeginTx: pgx.Tx, mysqlstore.Tx or sqlitestore.Tx. The transaction is
// valid until the handler returns and must not be committed or rolled
// back by it.
func Tx[X once.Tx](ctx context.Context) (X, bool) {
	tx, ok := ctx.Value(txKey{}).(X)
	return tx, ok
}

// txSettled reports whether a transactional call that ran the handler
// ended with its transaction committed or rolled back as meant, so that
// the response as written tells the truth.
func txSettled(s once.Status) bool {
	return s == once.Recorded || s == once.Held || s == once.Released
}

// logTxFailure logs what the store-failure observer cannot see of a
// transactional call: a begin that failed, and a response not committed
// with the handler's writes (the observer logs only the failed claims of
// these calls).
func (m *Middleware) logTxFailure(ctx context.Context, s once.Status, err error) {
	var se *once.StoreError
	var unrecorded *once.UnrecordedError
	switch {
	case s == 0 && errors.As(err, &se) && se.Op == "begin":
		logStoreFailure(ctx, m.logger, "begin", se.Err, "answered 503; the handler did not run")
	case (s == once.Unrecorded || s == once.HoldUnrecorded) && errors.As(err, &unrecorded):
		op := "complete"
		if s == once.HoldUnrecorded {
			op = "hold"
		}
		if errors.As(unrecorded.Err, &se) {
			op = se.Op // "commit"
		}
		logStoreFailure(ctx, m.logger, op, unrecorded.Err,
			"answered 503; the handler's writes and its response were committed together or not at all, so a retry with the key replays the response or runs the handler again")
	}
}

// logStoreFailure logs one store failure to logger (slog.Default() at the
// time of the line when nil).
func logStoreFailure(ctx context.Context, logger *slog.Logger, op string, err error, effect string) {
	if logger == nil {
		logger = slog.Default()
	}
	logger.LogAttrs(ctx, slog.LevelError, "oncehttp: idempotency store failed",
		slog.String("op", op), slog.Any("error", err), slog.String("effect", effect))
}

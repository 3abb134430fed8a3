package peers

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// stmtKey is the context key of the statement counter of the target whose
// operation runs on the context.
type stmtKey struct{}

// withStmts returns ctx carrying c: every statement sent on a traced pool
// under ctx (or a context derived from it) counts in c.
func withStmts(ctx context.Context, c *atomic.Int64) context.Context {
	return context.WithValue(ctx, stmtKey{}, c)
}

// stmtTracer counts the statements a pool sends (pgx's QueryTracer and
// BatchTracer, on the client): into the counter the query's context
// carries, or else into own, the counter of the target that owns the pool
// (nil: not counted). BEGIN and COMMIT are statements of their own; the
// statements of a batch count one each.
type stmtTracer struct{ own *atomic.Int64 }

func (t stmtTracer) count(ctx context.Context, n int64) {
	if c, ok := ctx.Value(stmtKey{}).(*atomic.Int64); ok {
		c.Add(n)
	} else if t.own != nil {
		t.own.Add(n)
	}
}

func (t stmtTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.count(ctx, 1)
	return ctx
}

func (stmtTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (stmtTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (t stmtTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchQueryData) {
	t.count(ctx, 1)
}

func (stmtTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

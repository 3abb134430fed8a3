package postgres

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/tracelog"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

type capturedLog struct {
	mu  sync.Mutex
	out bytes.Buffer
}

func (l *capturedLog) Log(_ context.Context, _ tracelog.LogLevel, msg string, data map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.out, "%s %v\n", msg, data["args"])
}

// pgx's tracelog prints a []byte or string argument truncated to 64 bytes
// (args.go says the pointer-shaped args print as the plain values
// would): a completion's large outcome must not be logged whole.
func TestTracelogTruncatesLikePlainValues(t *testing.T) {
	l := &capturedLog{}
	tl := &tracelog.TraceLog{Logger: l, LogLevel: tracelog.LogLevelInfo}
	s := newStore(t, newPool(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = tl }))
	ctx := t.Context()
	scope, owner := backendtest.Scope(t), backendtest.Token()
	r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Owner: owner, Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	outcome := bytes.Repeat([]byte{0xab}, 64<<10)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: outcome, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Less(t, l.out.Len(), 16<<10, "a 64 KiB outcome is logged whole (plain []byte: 64 bytes, truncated)")
}

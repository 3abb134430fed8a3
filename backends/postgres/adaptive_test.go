package postgres

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/internal/claimmix"
)

func TestRecordClaim(t *testing.T) {
	m := claimmix.New()
	for range claimmix.Start {
		recordClaim(m, insertedRow)
	}
	assert.True(t, m.CreateFirst(), "after claimmix.Start inserted rows")
	recordClaim(m, fastRow{found: true, state: int16(backends.StateCompleted)})
	assert.False(t, m.CreateFirst(), "a claim that met a row")
	m = claimmix.New()
	for range claimmix.Start - 1 {
		recordClaim(m, insertedRow)
	}
	recordClaim(m, fastRow{})
	for range claimmix.Start - 1 {
		recordClaim(m, insertedRow)
	}
	assert.False(t, m.CreateFirst(), "no visible row counts as met")
}

// sqlLog records the statements a pool sends.
type sqlLog struct {
	mu  sync.Mutex
	sql []string
}

func (l *sqlLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql = append(l.sql, d.SQL)
	return ctx
}

func (l *sqlLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// sent returns the statements fn sent.
func (l *sqlLog) sent(fn func()) []string {
	l.mu.Lock()
	n := len(l.sql)
	l.mu.Unlock()
	fn()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sql[n:]...)
}

// TestClaimMixSwitches checks that a Store sends the one-statement claim
// until claimmix.Start claims in a row inserted new keys, then the plain insert
// first, and the one-statement claim again right after a claim met a row:
// a replay then takes two statements once, and the next ones one.
func TestClaimMixSwitches(t *testing.T) {
	log := &sqlLog{}
	s := newStore(t, newPool(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = log }))
	ctx := context.Background()
	scope := backendtest.Scope(t)
	claim := func(key, fp string) backends.ClaimResult {
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: backendtest.Token(), Fingerprint: []byte(fp), Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		return r
	}
	for i := range claimmix.Start {
		var r backends.ClaimResult
		assert.Equal(t, []string{s.sql.Claim}, log.sent(func() { r = claim(string(rune('a'+i)), "fp") }), "new key %d", i)
		require.True(t, r.Claimed)
	}
	var r backends.ClaimResult
	assert.Equal(t, []string{s.sql.InsertClaim}, log.sent(func() { r = claim("new", "fp") }), "insert first")
	require.True(t, r.Claimed)
	assert.Equal(t, []string{s.sql.InsertClaim, s.sql.ReadClaim}, log.sent(func() { r = claim("new", "fp") }), "a duplicate among new keys")
	require.Equal(t, backends.StatePending, r.Existing.State)
	assert.Equal(t, []string{s.sql.Claim}, log.sent(func() { r = claim("new", "other") }), "the next claim")
	require.Equal(t, []byte("fp"), r.Existing.Fingerprint)
}

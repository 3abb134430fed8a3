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
	m := claimmix.New(claimmix.Even)
	assert.False(t, m.CreateFirst(), "a new Store reads first")
	recordClaim(m, insertedRow)
	assert.True(t, m.CreateFirst(), "after an inserted row")
	recordClaim(m, fastRow{found: true, state: int16(backends.StateCompleted)})
	assert.False(t, m.CreateFirst(), "a claim that met a row")
	recordClaim(m, insertedRow)
	recordClaim(m, fastRow{})
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

// TestClaimMixSwitches checks that a new Store reads first, sends its
// insert first from the claim after one that inserted a new key, and
// reads first again once its claims met as many rows as they inserted: a
// replay among new keys takes two statements, a new key among replays
// two.
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
	read, insert := s.sql.ReadClaim, s.sql.InsertClaim
	var r backends.ClaimResult
	assert.Equal(t, []string{read, insert}, log.sent(func() { r = claim("a", "fp") }), "a new Store reads first")
	require.True(t, r.Claimed)
	assert.Equal(t, []string{insert}, log.sent(func() { r = claim("b", "fp") }), "insert first")
	require.True(t, r.Claimed)
	assert.Equal(t, []string{insert, read}, log.sent(func() { r = claim("b", "fp") }), "a duplicate among new keys")
	require.Equal(t, backends.StatePending, r.Existing.State)
	assert.Equal(t, []string{insert, read}, log.sent(func() { r = claim("b", "other") }), "as many rows met as inserted")
	require.Equal(t, []byte("fp"), r.Existing.Fingerprint)
	assert.Equal(t, []string{read}, log.sent(func() { r = claim("b", "fp") }), "read first")
	require.Equal(t, backends.StatePending, r.Existing.State)
	assert.Equal(t, []string{read, insert}, log.sent(func() { r = claim("c", "fp") }), "a new key among duplicates")
	require.True(t, r.Claimed)
}

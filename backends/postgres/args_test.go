package postgres

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// TestArgsEveryExecMode: a claim and a completion sent with their
// pointer-shaped arguments (args.go) store what they are given in every
// pgx exec mode, the ones that know the parameters' types and the ones
// that do not, and a replay reads it back byte for byte.
func TestArgsEveryExecMode(t *testing.T) {
	modes := map[string]pgx.QueryExecMode{
		"CacheStatement": pgx.QueryExecModeCacheStatement,
		"CacheDescribe":  pgx.QueryExecModeCacheDescribe,
		"DescribeExec":   pgx.QueryExecModeDescribeExec,
		"Exec":           pgx.QueryExecModeExec,
		"SimpleProtocol": pgx.QueryExecModeSimpleProtocol,
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, newPool(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.DefaultQueryExecMode = mode }))
			ctx := t.Context()
			scope, owner := backendtest.Scope(t), backendtest.Token()
			fp := []byte{0, 1, 0xfe, 0xff, '\'', '\\', 'x'}
			outcome := []byte("\x00'\\x{\"v\":1}\xff")
			for _, insertFirst := range []bool{false, true} {
				pinOrder(s, insertFirst)
				key := fmt.Sprintf("k'\\%v", insertFirst)
				r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Fingerprint: fp, Owner: owner, Lease: time.Minute, Retention: time.Hour})
				require.NoError(t, err)
				require.True(t, r.Claimed)
				ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: owner, Outcome: outcome, Retention: time.Hour})
				require.NoError(t, err)
				require.True(t, ok)
				ok, err = s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: backendtest.Token(), Outcome: outcome, Retention: time.Hour})
				require.NoError(t, err)
				require.False(t, ok, "another owner's completion applies nothing")
				r, err = s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Fingerprint: fp, Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
				require.NoError(t, err)
				require.Equal(t, backends.StateCompleted, r.Existing.State)
				require.Equal(t, outcome, r.Existing.Outcome)
				require.Equal(t, fp, r.Existing.Fingerprint)
				require.Greater(t, r.Existing.ExpiresIn, 59*time.Minute, "the retention was sent as given")
			}
		})
	}
}

// argsPrinter is a pgx.QueryTracer that prints every statement's
// arguments as a logging tracer would: with %v, and as JSON.
type argsPrinter struct {
	mu      sync.Mutex
	printed []string
}

func (p *argsPrinter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	j, err := json.Marshal(d.Args)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.printed = append(p.printed, fmt.Sprintf("%v", d.Args), string(j), fmt.Sprint(err))
	return ctx
}

func (p *argsPrinter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (p *argsPrinter) all() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.printed, "\n")
}

// TestArgsPrintAsValues: a tracer that formats a claim's and a
// completion's arguments (fmt, encoding/json) sees their values, never a
// pointer or an empty object.
func TestArgsPrintAsValues(t *testing.T) {
	p := &argsPrinter{}
	s := newStore(t, newPool(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = p }))
	ctx := t.Context()
	scope, owner := backendtest.Scope(t), backendtest.Token()
	fp := []byte("fingerprint-0123456789")
	outcome := []byte(`{"status":"paid","id":"formatted-7"}`)
	r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Fingerprint: fp, Owner: owner, Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: outcome, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)

	all := p.all()
	require.Contains(t, all, scope)
	require.Contains(t, all, owner)
	require.Contains(t, all, hex.EncodeToString(fp), "a bytea prints as its hex")
	require.Contains(t, all, base64.StdEncoding.EncodeToString(outcome), "a bytea is JSON-encoded as a []byte is (base64)")
	require.Contains(t, all, "3600000000", "the retention prints as its microseconds")
	require.NotRegexp(t, regexp.MustCompile(`\b0x[0-9a-f]{8,}\b`), all, "no argument prints as a pointer")
	require.NotContains(t, all, "{}", "no argument is JSON-encoded as an empty object")
	require.NotContains(t, all, "json:", "every argument JSON-encodes")
}

package redisstore_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/redislua"
)

// formatter is a go-redis hook that formats every command's arguments
// before and after it runs, as tracing and logging hooks do (cmd.String(),
// fmt over cmd.Args()), and keeps what it printed of the arguments alone
// (cmd.String() after the command ran holds its reply too, which would
// carry the record's bytes whatever the arguments printed).
type formatter struct {
	mu      sync.Mutex
	printed []string
}

// print formats cmd's arguments; before it ran, cmd.String() as well (it
// has no reply yet).
func (f *formatter) print(cmd redis.Cmder, before bool) {
	s := fmt.Sprint(cmd.Args()...)
	if before {
		s += " | " + cmd.String()
		// and as a logger that writes the arguments as JSON does
		if j, err := json.Marshal(cmd.Args()); err == nil {
			s += " | " + string(j)
		}
	}
	f.mu.Lock()
	f.printed = append(f.printed, s)
	f.mu.Unlock()
}

func (f *formatter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *formatter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f.print(cmd, true)
		err := next(ctx, cmd)
		f.print(cmd, false)
		return err
	}
}

func (f *formatter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			f.print(c, true)
		}
		err := next(ctx, cmds)
		for _, c := range cmds {
			f.print(c, false)
		}
		return err
	}
}

// contains reports whether some printed line contains s.
func (f *formatter) contains(s string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.printed {
		if strings.Contains(p, s) {
			return true
		}
	}
	return false
}

// pointer is how fmt prints a pointer (0xc000123456 on the heap). A bare
// "0x" is not enough: the base64 of a key in the JSON-formatted arguments
// holds those two characters by chance.
var pointer = regexp.MustCompile(`\b0x[0-9a-f]{8,}\b`)

// matches reports whether some printed line matches re.
func (f *formatter) matches(re *regexp.Regexp) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.printed {
		if re.MatchString(p) {
			return true
		}
	}
	return false
}

// TestFormattingHookSeesArgumentBytes: a hook that formats the claim's and
// the completion's arguments (before and after they run) prints the bytes
// sent (the owner, the fingerprint inside the pending record, the
// outcome), and formatting changes nothing that is stored.
func TestFormattingHookSeesArgumentBytes(t *testing.T) {
	clients := map[string]func(*testing.T) redis.UniversalClient{
		"Single": func(t *testing.T) redis.UniversalClient {
			singleClient(t)
			c := redis.NewClient(&redis.Options{Addr: singleAddr()})
			t.Cleanup(func() { _ = c.Close() })
			return c
		},
		"Cluster": func(t *testing.T) redis.UniversalClient {
			clusterClient(t)
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs()})
			t.Cleanup(func() { _ = c.Close() })
			return c
		},
	}
	for name, newClient := range clients {
		t.Run(name, func(t *testing.T) {
			c := newClient(t)
			f := &formatter{}
			c.AddHook(f)
			s := newStore(t, c, nil)
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
			r, err = s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Fingerprint: fp, Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
			require.NoError(t, err)
			require.Equal(t, backends.StateCompleted, r.Existing.State)
			require.Equal(t, outcome, r.Existing.Outcome)
			require.Equal(t, fp, r.Existing.Fingerprint)

			require.True(t, f.contains(string(fp)), "the pending record is printed as its bytes")
			require.True(t, f.contains(string(outcome)), "the outcome is printed as its bytes")
			require.True(t, f.contains("evalsha"), "the completion is an EVALSHA")
			require.False(t, f.matches(pointer), "no argument is printed as a pointer")
			require.True(t, f.contains(base64.StdEncoding.EncodeToString(outcome)), "the outcome is JSON-encoded as a []byte is (base64)")
			require.False(t, f.contains("{}"), "no argument is JSON-encoded as an empty object")
		})
	}
}

// TestCompleteOutcomeSizes: an empty outcome (nil or zero-length), one of
// 512 KiB, and the longest owner token, through the completion's
// arguments, come back byte for byte.
func TestCompleteOutcomeSizes(t *testing.T) {
	s := newStore(t, singleClient(t), nil)
	ctx := t.Context()
	scope := backendtest.Scope(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 32<<10)
	cases := []struct {
		name    string
		owner   string
		outcome []byte
	}{
		{"nil", backendtest.Token(), nil},
		{"empty", backendtest.Token(), []byte{}},
		{"512KiB", backendtest.Token(), big},
		{"longOwner", strings.Repeat("o", 255), []byte("v")},
	}
	for _, c := range cases {
		fp := bytes.Repeat([]byte{0xfe}, backends.MaxFingerprintLen)
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: c.name, Fingerprint: fp, Owner: c.owner, Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err, c.name)
		require.True(t, r.Claimed, c.name)
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: c.name, Owner: c.owner, Outcome: c.outcome, Retention: time.Hour})
		require.NoError(t, err, c.name)
		require.True(t, ok, c.name)
		ok, err = s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: c.name, Owner: c.owner, Outcome: c.outcome, Retention: time.Hour})
		require.NoError(t, err, c.name)
		require.True(t, ok, "%s: a re-sent completion with the same outcome", c.name)
		r, err = s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: c.name, Fingerprint: fp, Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err, c.name)
		require.Equal(t, backends.StateCompleted, r.Existing.State, c.name)
		require.True(t, bytes.Equal(c.outcome, r.Existing.Outcome), "%s: outcome of %d bytes came back as %d", c.name, len(c.outcome), len(r.Existing.Outcome))
		require.Equal(t, fp, r.Existing.Fingerprint, c.name)
	}
}

// TestClusterScriptCacheFlushed: the completion's EVALSHA on a Cluster
// whose masters lost their script cache falls back to EVAL, routed to the
// key's master.
func TestClusterScriptCacheFlushed(t *testing.T) {
	c := clusterClient(t)
	if !requireServers() {
		t.Skip("SCRIPT FLUSH affects every user of the cluster; runs only with ONCE_REQUIRE_SERVERS=1 or CI")
	}
	s := newStore(t, c, nil)
	ctx := t.Context()
	scope := backendtest.Scope(t)
	for i := range 8 { // keys in several slots, on several masters
		key, owner := fmt.Sprintf("k%d", i), backendtest.Token()
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
		require.NoError(t, c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return m.ScriptFlush(ctx).Err()
		}))
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: owner, Outcome: []byte(key), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok, key)
		r, err = s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.Equal(t, []byte(key), r.Existing.Outcome)
	}
}

// stallConn blocks every Read until its connection is closed, as a
// server that stopped answering: go-redis gives up on the context.
type stallConn struct {
	net.Conn
	stall *bool
	mu    *sync.Mutex
}

func (c stallConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	stall := *c.stall
	c.mu.Unlock()
	if !stall {
		return c.Conn.Read(p)
	}
	// The server applied the command and replied: the reply is dropped,
	// and the next read waits for the deadline go-redis set from the
	// context.
	if _, err := c.Conn.Read(p); err != nil {
		return 0, err
	}
	_, err := c.Conn.Read(p)
	_ = c.Conn.Close()
	if err == nil {
		err = net.ErrClosed
	}
	return 0, err
}

// TestCancelledMidCommand: a claim's pipeline and a completion whose
// context ends while they wait for the reply return the context's error;
// the pooled pipeline and the store then work as before, and the key's
// state is one of the two the contract allows (the write applied or not),
// which a retry with a live context settles.
func TestCancelledMidCommand(t *testing.T) {
	singleClient(t)
	var mu sync.Mutex
	stall := false
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return stallConn{Conn: c, stall: &stall, mu: &mu}, nil
	}
	c := redis.NewClient(&redis.Options{Addr: singleAddr(), Dialer: dial, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	s := newStore(t, c, nil)
	scope, owner := backendtest.Scope(t), backendtest.Token()
	setStall := func(v bool) { mu.Lock(); stall = v; mu.Unlock() }

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	setStall(true)
	_, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Fingerprint: []byte("fp"), Owner: owner, Lease: time.Minute, Retention: time.Hour})
	cancel()
	setStall(false)
	require.Error(t, err)
	r, err := s.Claim(t.Context(), backends.ClaimParams{Scope: scope, Key: "k", Fingerprint: []byte("fp"), Owner: owner, Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed, "the retry of a claim cut off mid-command is the same owner's claim")

	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	setStall(true)
	_, err = s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
	cancel()
	setStall(false)
	require.Error(t, err)
	ok, err := s.Complete(t.Context(), backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok, "the retry of a completion cut off mid-command")
	r, err = s.Claim(t.Context(), backends.ClaimParams{Scope: scope, Key: "k", Fingerprint: []byte("fp"), Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.Equal(t, []byte("v"), r.Existing.Outcome)
}

// flushingConn loses the reply of the first command that carries sha,
// after the server applied it, and flushes the server's script cache
// before go-redis re-sends the command: the re-send gets NOSCRIPT, as
// after a failover to a replica that never loaded the script.
type flushingConn struct {
	net.Conn
	sha     []byte
	armed   *bool
	mu      *sync.Mutex
	flush   func()
	lose    bool
	broken  bool // the reply was lost: every later read fails
	dropped *int
}

func (c *flushingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if *c.armed && bytes.Contains(p, c.sha) {
		*c.armed, c.lose = false, true
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *flushingConn) Read(p []byte) (int, error) {
	if c.broken {
		return 0, net.ErrClosed
	}
	if !c.lose {
		return c.Conn.Read(p)
	}
	c.lose, c.broken = false, true
	buf := make([]byte, 64<<10)
	_, _ = c.Conn.Read(buf) // applied and answered
	c.flush()
	_ = c.Conn.Close()
	c.mu.Lock()
	*c.dropped++
	c.mu.Unlock()
	return 0, net.ErrClosed
}

// TestReSentCompleteAfterScriptFlush: a completion's EVALSHA applies, its
// reply is lost, and the server loses its script cache before go-redis
// re-sends it: the re-send gets NOSCRIPT, the store falls back to EVAL,
// and the completion reports true (its own completion, with the same
// outcome), not a lost claim.
func TestReSentCompleteAfterScriptFlush(t *testing.T) {
	admin := singleClient(t)
	if !requireServers() {
		t.Skip("SCRIPT FLUSH affects every user of the server; runs only with ONCE_REQUIRE_SERVERS=1 or CI")
	}
	var mu sync.Mutex
	armed, dropped := false, 0
	sum := sha1.Sum([]byte(redislua.Complete))
	sha := []byte(hex.EncodeToString(sum[:]))
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &flushingConn{Conn: c, sha: sha, armed: &armed, mu: &mu, dropped: &dropped,
			flush: func() { _ = admin.ScriptFlush(context.Background()).Err() }}, nil
	}
	c := redis.NewClient(&redis.Options{Addr: singleAddr(), Dialer: dial, PoolSize: 1, PipelinePoolSize: -1})
	t.Cleanup(func() { _ = c.Close() })
	s := newStore(t, c, nil)
	ctx := t.Context()
	scope, owner := backendtest.Scope(t), backendtest.Token()
	r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Owner: owner, Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	mu.Lock()
	armed = true
	mu.Unlock()
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	mu.Lock()
	require.Equal(t, 1, dropped, "the first reply was lost")
	mu.Unlock()
	require.True(t, ok, "the re-sent completion, through EVAL, reports the completion it made")
	r, err = s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.Equal(t, []byte("v"), r.Existing.Outcome)
}

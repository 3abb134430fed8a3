package redisstore_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/internal/claimmix"
	"github.com/stagedoor/once/internal/redislua"
)

// lossyDialer dials the real server and, once armed for a script (or for
// bytes the next command carries), lets the next command that contains
// them reach the server, waits for its reply, drops the reply and breaks
// the connection: the server applied the command, the client saw io.EOF,
// and go-redis re-sends the command on a new connection, exactly as after
// a network failure between the two.
type lossyDialer struct {
	mu      sync.Mutex
	sha     []byte // what the command whose reply is lost contains; nil when disarmed
	reply   []byte // the last reply lost
	dropped atomic.Int32
	dials   atomic.Int32
}

// lostReply returns the last reply the server sent that the client lost.
func (d *lossyDialer) lostReply() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return string(d.reply)
}

// arm loses the reply of the next EVALSHA of script.
func (d *lossyDialer) arm(script string) {
	sum := sha1.Sum([]byte(script))
	d.armBytes(hex.EncodeToString(sum[:]))
}

// armBytes loses the reply of the next command (or pipeline) that
// contains b.
func (d *lossyDialer) armBytes(b string) {
	d.mu.Lock()
	d.sha = []byte(b)
	d.mu.Unlock()
}

func (d *lossyDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.dials.Add(1)
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &lossyConn{Conn: c, d: d}, nil
}

type lossyConn struct {
	net.Conn
	d         *lossyDialer
	loseReply bool
	broken    bool // the reply was lost: every later read fails, as on a broken connection
}

func (c *lossyConn) Write(p []byte) (int, error) {
	c.d.mu.Lock()
	if c.d.sha != nil && bytes.Contains(p, c.d.sha) {
		c.loseReply, c.d.sha = true, nil
	}
	c.d.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *lossyConn) Read(p []byte) (int, error) {
	if c.broken {
		return 0, io.EOF
	}
	if !c.loseReply {
		return c.Conn.Read(p)
	}
	c.loseReply, c.broken = false, true
	buf := make([]byte, 64<<10)
	n, _ := c.Conn.Read(buf) // the server has applied the command and replied
	c.d.mu.Lock()
	c.d.reply = buf[:n]
	c.d.mu.Unlock()
	_ = c.Conn.Close()
	c.d.dropped.Add(1)
	return 0, io.EOF
}

// lossyStore returns a store whose client re-sends after a lost reply
// (go-redis's default MaxRetries), and its dialer. The client has one
// connection: pipelines (the claim's) share it rather than
// dialing their own pool, so that every dial after the first is a re-send.
func lossyStore(t *testing.T) (backends.Store, *lossyDialer) {
	t.Helper()
	singleClient(t) // skip or fail when the server is down
	d := &lossyDialer{}
	c := redis.NewClient(&redis.Options{Addr: singleAddr(), Dialer: d.dial, PoolSize: 1, PipelinePoolSize: -1})
	t.Cleanup(func() { _ = c.Close() })
	return newStore(t, c, nil), d
}

// TestReSentAfterLostReply reproduces issue 13 (7) against the real Redis:
// each write's first reply is lost after the server applied it, go-redis
// re-sends it, and the store must report what the first send did, but for
// the contract's two exceptions, Release and Admin.Delete, whose re-send
// reports false (backends, "Re-sent writes").
func TestReSentAfterLostReply(t *testing.T) {
	ctx := t.Context()
	lease, retention := time.Minute, time.Hour
	claim := func(s backends.Store, scope, owner string) {
		t.Helper()
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Fingerprint: []byte("fp"), Owner: owner, Lease: lease, Retention: retention})
		require.NoError(t, err)
		require.True(t, r.Claimed)
	}
	lost := func(t *testing.T, d *lossyDialer) {
		t.Helper()
		require.Equal(t, int32(1), d.dropped.Load(), "the first reply was lost")
		require.Equal(t, int32(2), d.dials.Load(), "and the command re-sent on a new connection")
	}

	t.Run("Resolve", func(t *testing.T) {
		for _, held := range []bool{false, true} {
			s, d := lossyStore(t)
			scope := backendtest.Scope(t)
			if held {
				owner := backendtest.Token()
				claim(s, scope, owner)
				ok, err := s.Hold(ctx, backends.HoldParams{Scope: scope, Key: "k", Owner: owner, For: lease, Retention: retention})
				require.NoError(t, err)
				require.True(t, ok)
			}
			d.arm(redislua.Resolve)
			r, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "k", Fingerprint: []byte("fp"), Owner: backendtest.Token(), Outcome: []byte("reconciled"), Retention: retention})
			require.NoError(t, err)
			lost(t, d)
			require.True(t, r.Resolved, "held=%v: a re-sent Resolve that applied reports Resolved, not the record it wrote", held)
		}
	})

	t.Run("Claim", func(t *testing.T) {
		// The claim's pipeline (PTTL, SET NX GET) applied; its re-send
		// finds the record it wrote, with its own owner token.
		s, d := lossyStore(t)
		owner := backendtest.Token()
		d.armBytes(owner)
		claim(s, backendtest.Scope(t), owner)
		lost(t, d)
	})

	t.Run("ClaimAlone", func(t *testing.T) {
		// After claimmix.Start new keys the claim's SET goes alone; it
		// applied, and its re-send finds the record it wrote, with its
		// own owner token.
		s, d := lossyStore(t)
		scope, owner := backendtest.Scope(t), backendtest.Token()
		for i := range claimmix.Start {
			claim(s, scope+strconv.Itoa(i), backendtest.Token())
		}
		d.armBytes(owner)
		claim(s, scope, owner)
		lost(t, d)
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: retention})
		require.NoError(t, err)
		require.True(t, ok, "the re-sent claim left the claim to its owner")
	})

	t.Run("ClaimTakeover", func(t *testing.T) {
		// A takeover (claim.lua, after the pipeline found a lapsed
		// lease) applied; its re-send reports Claimed, and the claim is
		// the new owner's.
		s, d := lossyStore(t)
		scope, owner := backendtest.Scope(t), backendtest.Token()
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Fingerprint: []byte("fp"), Owner: backendtest.Token(), Lease: time.Millisecond, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
		backendtest.Elapse(t, s, time.Millisecond)
		d.arm(redislua.Claim)
		claim(s, scope, owner)
		lost(t, d)
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: retention})
		require.NoError(t, err)
		require.True(t, ok, "the re-sent takeover left the claim to its owner")
	})

	t.Run("Complete", func(t *testing.T) {
		s, d := lossyStore(t)
		scope, owner := backendtest.Scope(t), backendtest.Token()
		claim(s, scope, owner)
		d.arm(redislua.Complete)
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: retention})
		require.NoError(t, err)
		lost(t, d)
		require.True(t, ok)
	})

	t.Run("Renew", func(t *testing.T) {
		s, d := lossyStore(t)
		scope, owner := backendtest.Scope(t), backendtest.Token()
		claim(s, scope, owner)
		d.arm(redislua.Renew)
		ok, err := s.Renew(ctx, backends.RenewParams{Scope: scope, Key: "k", Owner: owner, Lease: lease})
		require.NoError(t, err)
		lost(t, d)
		require.True(t, ok)
	})

	// applied checks that the command whose reply was lost was the script
	// and deleted the record (":1"): after a SCRIPT FLUSH (other tests of
	// the server run one) the first EVALSHA is refused with NOSCRIPT, and
	// only the re-send's EVAL applies, which then reports true. warm loads
	// the script just before.
	applied := func(t *testing.T, d *lossyDialer) {
		t.Helper()
		require.Equal(t, ":1\r\n", d.lostReply(), "the first send deleted the record")
	}

	t.Run("Release", func(t *testing.T) {
		// One of the contract's two exceptions: the re-send finds nothing
		// and says so; the key is released either way.
		s, d := lossyStore(t)
		scope, owner := backendtest.Scope(t), backendtest.Token()
		claim(s, scope, owner)
		_, err := s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: "absent", Owner: owner}) // warm
		require.NoError(t, err)
		d.arm(redislua.Release)
		ok, err := s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: "k", Owner: owner})
		require.NoError(t, err)
		lost(t, d)
		applied(t, d)
		require.False(t, ok)
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Owner: backendtest.Token(), Lease: lease, Retention: retention})
		require.NoError(t, err)
		require.True(t, r.Claimed, "released")
	})

	hold := func(s backends.Store, scope, owner string) bool {
		t.Helper()
		ok, err := s.Hold(ctx, backends.HoldParams{Scope: scope, Key: "k", Owner: owner, For: lease, Code: "c", Message: "m", Retention: retention})
		require.NoError(t, err)
		return ok
	}

	t.Run("Hold", func(t *testing.T) {
		// The re-send finds the record held by its own owner token.
		s, d := lossyStore(t)
		scope, owner := backendtest.Scope(t), backendtest.Token()
		claim(s, scope, owner)
		d.arm(redislua.Hold)
		require.True(t, hold(s, scope, owner), "a re-sent Hold that applied reports true")
		lost(t, d)
		rec, err := s.(backends.Admin).Get(ctx, scope, "k")
		require.NoError(t, err)
		require.NotZero(t, rec.State)
		require.Equal(t, backends.StateHeld, rec.State)
		require.Equal(t, "c", rec.Held.Code)
	})

	t.Run("LeaseHeld", func(t *testing.T) {
		// The re-send by the same reconciler token extends its own lease.
		s, d := lossyStore(t)
		scope, owner := backendtest.Scope(t), backendtest.Token()
		claim(s, scope, owner)
		require.True(t, hold(s, scope, owner))
		d.arm(redislua.LeaseHeld)
		r, err := s.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: scope, Key: "k", Owner: backendtest.Token(), Lease: lease})
		require.NoError(t, err)
		lost(t, d)
		require.True(t, r.Leased, "a re-sent LeaseHeld that applied reports the lease, not another reconciler's: %+v", r)
	})

	t.Run("Delete", func(t *testing.T) {
		// The contract's other exception: the re-send finds the key
		// absent and reports false; the record is gone either way.
		s, d := lossyStore(t)
		scope := backendtest.Scope(t)
		claim(s, scope, backendtest.Token())
		_, err := s.(backends.Admin).Delete(ctx, scope, "absent") // warm
		require.NoError(t, err)
		d.arm(redislua.Delete)
		deleted, err := s.(backends.Admin).Delete(ctx, scope, "k")
		require.NoError(t, err)
		lost(t, d)
		applied(t, d)
		require.False(t, deleted, "a re-sent Delete reports false (see backends, \"Re-sent writes\")")
		got, err := s.(backends.Admin).Get(ctx, scope, "k")
		found := got.State != 0
		require.NoError(t, err)
		require.False(t, found, "deleted")
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Owner: backendtest.Token(), Lease: lease, Retention: retention})
		require.NoError(t, err)
		require.True(t, r.Claimed, "the next claim is a new intent")
	})
}

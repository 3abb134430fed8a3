package once_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/internal/testservers"
)

// pausableProxy forwards TCP to target; while paused it holds every byte,
// as a network partition or a stalled server looks to the client. Armed
// with stallOn, it holds the first request that carries its marker, and
// every later byte of that connection, until the stall's resume is
// closed: one stalled connection among healthy ones.
type pausableProxy struct {
	ln     net.Listener
	paused atomic.Bool
	stall  atomic.Pointer[connStall]
}

// connStall is one connection stalled by pausableProxy.stallOn.
type connStall struct {
	marker         []byte
	once           sync.Once
	caught, resume chan struct{}
}

// stallOn arms p to stall the next connection that sends marker. caught
// is closed when it has.
func (p *pausableProxy) stallOn(marker []byte) *connStall {
	s := &connStall{marker: marker, caught: make(chan struct{}), resume: make(chan struct{})}
	p.stall.Store(s)
	return s
}

// hold blocks the first caller whose bytes b carry the marker until
// resume is closed.
func (s *connStall) hold(b []byte) {
	first := false
	if bytes.Contains(b, s.marker) {
		s.once.Do(func() { first = true; close(s.caught) })
	}
	if first {
		<-s.resume
	}
}

func newPausableProxy(t *testing.T, target string) *pausableProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &pausableProxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			t.Cleanup(func() { _ = c.Close(); _ = s.Close() })
			go p.pipe(c, s, true)
			go p.pipe(s, c, false)
		}
	}()
	return p
}

// pipe copies from to to; request tells the client's direction, the one a
// stall holds.
func (p *pausableProxy) pipe(from, to net.Conn, request bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		for p.paused.Load() {
			time.Sleep(time.Millisecond)
		}
		if s := p.stall.Load(); request && s != nil {
			s.hold(buf[:n])
		}
		if n > 0 {
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				_ = to.Close()
			}
			return
		}
	}
}

// proxiedRedisStores returns two Redis stores sharing a fresh key prefix:
// owner's client, with go-redis's defaults but ContextTimeoutEnabled as
// ctxTimeouts says, goes through proxy; dup's goes straight to Redis.
func proxiedRedisStores(t *testing.T, ctxTimeouts bool) (proxy *pausableProxy, owner, dup *redisstore.Store) {
	ctx := context.Background()
	dupClient := testservers.RedisClient(t) // also checks the server is up
	proxy = newPausableProxy(t, testservers.RedisAddr())
	prefix := "once-t-" + testservers.Suffix() + ":"
	t.Cleanup(func() {
		iter := dupClient.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			_ = dupClient.Del(ctx, iter.Val()).Err()
		}
	})
	viaProxy := redis.NewClient(&redis.Options{Addr: proxy.ln.Addr().String(), ContextTimeoutEnabled: ctxTimeouts})
	t.Cleanup(func() { _ = viaProxy.Close() })
	cfg := &redisstore.Config{KeyPrefix: prefix, EvictionPolicyCheck: redisstore.EvictionIgnore}
	owner, err := redisstore.New(ctx, viaProxy, cfg)
	require.NoError(t, err)
	dup, err = redisstore.New(ctx, dupClient, cfg)
	require.NoError(t, err)
	return proxy, owner, dup
}

// An owner cut off from Redis must not keep a live context past its
// lease. go-redis ignores context deadlines unless the client sets
// ContextTimeoutEnabled (off by default), so a Renew on a partitioned
// connection blocks for ReadTimeout and its retries whatever the
// renewal's context says, and the renewer, which decided only when a
// Renew returned, never failed closed: a duplicate that reached Redis took
// the key over and ran fn beside a live owner (review finding R11). The
// watchdog cancels fn's context at the proven lease end less the margin,
// with the client's defaults (subtest "defaults") as with
// ContextTimeoutEnabled (subtest "context timeouts").
func TestPartitionedRedisOwnerLosesItsContextBeforeItsLease(t *testing.T) {
	for _, c := range []struct {
		name        string
		ctxTimeouts bool
	}{{"defaults", false}, {"context timeouts", true}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			proxy, ownerStore, dupStore := proxiedRedisStores(t, c.ctxTimeouts)

			const lease = 600 * time.Millisecond
			started, secondRan := make(chan struct{}), make(chan struct{})
			type first struct {
				live  bool
				cause error
			}
			firstDone := make(chan first, 1)
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = once.Do(ctx, once.New(ownerStore, once.WithLease(lease)).Scope("s"), "k", nil, func(fctx context.Context) (int, error) {
					close(started)
					select {
					case <-secondRan:
					case <-fctx.Done():
					}
					firstDone <- first{live: fctx.Err() == nil, cause: context.Cause(fctx)}
					return 1, nil
				})
			}()
			<-started
			proxy.paused.Store(true)
			awaitLeaseEnd(t, dupStore, "s", "k")
			ran := false
			_, _ = once.Do(ctx, once.New(dupStore, once.WithLease(lease)).Scope("s"), "k", nil, func(context.Context) (int, error) {
				ran = true
				close(secondRan)
				return 2, nil
			})
			if !ran {
				close(secondRan)
			}
			f := <-firstDone
			proxy.paused.Store(false)
			<-done
			assert.True(t, ran, "the duplicate took the lapsed lease over")
			assert.False(t, ran && f.live, "a duplicate ran fn while the partitioned owner's fn ran with a live context")
			assert.ErrorIs(t, f.cause, once.ErrLeaseLost)
		})
	}
}

// A Renew stalled on its connection past fn's end, behind a go-redis
// client with its defaults (ContextTimeoutEnabled false: the renewal's
// context is ignored, the read waits for ReadTimeout), held the outcome's
// write back, which waited for the renewal: nothing was written before the
// lease lapsed, a duplicate took the key over and ran fn again (issue 26).
// The write no longer waits for it: the duplicate, waiting for the key,
// gets the stored outcome, and fn runs once.
func TestStalledRedisRenewalNeverLetsADuplicateRunFn(t *testing.T) {
	ctx := context.Background()
	proxy, ownerStore, dupStore := proxiedRedisStores(t, false)

	const lease = 1500 * time.Millisecond
	var runs atomic.Int32
	type result struct {
		out once.Outcome[string]
		err error
	}
	first := make(chan result, 1)
	var stall *connStall
	armed := make(chan struct{})
	go func() {
		out, err := once.DoOutcome(ctx, once.New(ownerStore, once.WithLease(lease)).Scope("s"), "k", nil, func(context.Context) (string, error) {
			runs.Add(1)
			// Only Claim and Renew send the lease, in milliseconds; the
			// claim has been sent, so the next is the first renewal.
			stall = proxy.stallOn([]byte("$4\r\n1500\r\n"))
			close(armed)
			<-stall.caught // fn returns while the renewal is stalled
			return "first", nil
		})
		first <- result{out, err}
	}()
	<-armed
	<-stall.caught
	t.Cleanup(func() { close(stall.resume) })
	v, err := once.Do(ctx, once.New(dupStore, once.WithLease(lease), once.WithWait(2*lease)).Scope("s"), "k", nil, func(context.Context) (string, error) {
		runs.Add(1)
		return "second", nil
	})
	r := <-first
	require.Equal(t, int32(1), runs.Load(), "fn ran again (duplicate got %q, %v; first got %+v, %v)", v, err, r.out, r.err)
	require.NoError(t, err)
	assert.Equal(t, "first", v, "the duplicate gets the stored outcome")
	require.NoError(t, r.err)
	assert.Equal(t, once.Recorded, r.out.Status)
}

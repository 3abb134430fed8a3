package oncenats_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncenats"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/consume"
)

// holdKey claims key in scope from another consumer and keeps the claim
// until release returns its handler's error.
func holdKey(t *testing.T, scope once.Scope, key string, fp once.Fingerprint) (release func(error)) {
	t.Helper()
	started, rel, done := make(chan struct{}), make(chan error), make(chan struct{})
	go func() {
		defer close(done)
		_, _ = once.Do(context.Background(), scope, key, fp, func(context.Context) (int, error) {
			close(started)
			return 0, <-rel
		})
	}()
	<-started
	var released bool
	release = func(err error) {
		if !released {
			released = true
			rel <- err
			<-done
		}
	}
	t.Cleanup(func() { release(nil) })
	return release
}

// A consumer shutting down (its context ends while the handler runs and
// the handler returns the context's error) requeues the message on its
// last allowed delivery instead of terminating it as exhausted.
func TestShutdownOnTheLastDeliveryIsNotExhausted(t *testing.T) {
	e := newEnv(t, 30*time.Second)
	e.publish(t, "charge", map[string]string{nats.MsgIdHdr: "order-3"})
	scope := once.New(memory.New(nil)).Scope("billing")
	cfg := &oncenats.Config{MaxDeliveries: 2, RetryBackoff: time.Millisecond}
	d, err := oncenats.Process(context.Background(), scope, e.next(t), func(context.Context, jetstream.Msg) error { return errors.New("transient") }, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonHandlerError, d.Reason)
	ctx, cancel := context.WithCancel(context.Background())
	msg := e.next(t)
	require.EqualValues(t, 2, numDelivered(t, msg))
	d, err = oncenats.Process(ctx, scope, msg, func(ctx context.Context, _ jetstream.Msg) error {
		cancel() // SIGTERM while the handler runs
		<-ctx.Done()
		return ctx.Err()
	}, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.RetryLater, d.Action, "decision %v", d)
	require.Equal(t, consume.ReasonCanceled, d.Reason)
	d, err = oncenats.Process(context.Background(), scope, e.next(t), func(context.Context, jetstream.Msg) error { return nil }, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonDone, d.Reason)
	e.settled(t)
}

// A message whose key another consumer is running is Nak-ed after the
// owner's lease left, not after the core's one-second hint: every Nak
// spends one of the consumer's MaxDeliver deliveries.
func TestInProgressNakWaitsTheOwnersLease(t *testing.T) {
	e := newEnv(t, 30*time.Second)
	scope := once.New(memory.New(nil)).Scope("billing") // the default lease, 30 s
	release := holdKey(t, scope, "order-1", nil)
	defer release(nil)
	e.publish(t, "charge 10", map[string]string{"Order-Id": "order-1"})
	cfg := &oncenats.Config{Key: oncenats.HeaderKey("Order-Id"), Fingerprint: func(jetstream.Msg) once.Fingerprint { return nil }}
	d, err := oncenats.Process(context.Background(), scope, e.next(t), func(context.Context, jetstream.Msg) error { return nil }, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonInProgress, d.Reason)
	require.Greater(t, d.RetryAfter, time.Second, "the lease left, not capped at 1s")
	require.LessOrEqual(t, d.RetryAfter, 30*time.Second, "the default lease")
}

// The delivery that held its key, and a duplicate while the key is held,
// are Nak-ed after the hold left (at most consume.HeldRedelivery).
func TestHeldKeyNakWaitsTheHold(t *testing.T) {
	e := newEnv(t, 30*time.Second)
	scope := once.New(memory.New(nil), once.WithHoldFor(10*time.Minute)).Scope("billing")
	e.publish(t, "charge", map[string]string{nats.MsgIdHdr: "order-h", "Order-Id": "order-h"})
	cfg := &oncenats.Config{Key: oncenats.HeaderKey("Order-Id")}
	d, err := oncenats.Process(context.Background(), scope, e.next(t), func(context.Context, jetstream.Msg) error {
		return once.Hold(errors.New("provider timeout after send"))
	}, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonHeld, d.Reason)
	require.Equal(t, consume.HeldRedelivery, d.RetryAfter, "the ten-minute hold, at most HeldRedelivery: not the 30 s lease")
	e.publish(t, "charge", map[string]string{nats.MsgIdHdr: "order-h2", "Order-Id": "order-h"})
	d, err = oncenats.Process(context.Background(), scope, e.next(t), func(context.Context, jetstream.Msg) error { return nil }, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonInProgress, d.Reason)
	require.Equal(t, consume.HeldRedelivery, d.RetryAfter)
}

// downStore is a store whose every claim fails as an unreachable server's.
type downStore struct{ backends.Store }

func (downStore) Claim(context.Context, backends.ClaimParams) (backends.ClaimResult, error) {
	return backends.ClaimResult{}, errors.New("dial tcp 127.0.0.1:6379: connection refused")
}

// deliveredMsg is a JetStream message as its n-th delivery; it records the
// Nak delay.
type deliveredMsg struct {
	jetstream.Msg
	n     uint64
	delay time.Duration
}

func (m *deliveredMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{NumDelivered: m.n, Stream: "ORDERS"}, nil
}
func (m *deliveredMsg) Headers() nats.Header {
	return nats.Header{nats.MsgIdHdr: []string{"order-5"}}
}
func (m *deliveredMsg) Subject() string { return "ORDERS.new" }
func (m *deliveredMsg) Data() []byte    { return []byte("charge") }
func (m *deliveredMsg) NakWithDelay(d time.Duration) error {
	m.delay = d
	return nil
}

// While the store is down, each delivery waits twice as long as the one
// before, from consume.StoreRetryAfter up to MaxRetryBackoff, so a long outage
// costs few deliveries.
func TestStoreOutageBacksOffPerDelivery(t *testing.T) {
	down := once.New(downStore{memory.New(nil)}).Scope("billing")
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	for i, w := range want {
		msg := &deliveredMsg{n: uint64(i + 1)}
		d, err := oncenats.Process(context.Background(), down, msg, func(context.Context, jetstream.Msg) error { return nil }, &oncenats.Config{MaxDeliveries: 2})
		require.NoError(t, err)
		require.Equal(t, consume.ReasonStoreDown, d.Reason)
		require.Equal(t, w, d.RetryAfter, "delivery %d", i+1)
		require.Equal(t, w, msg.delay, "the Nak's delay is the reported one")
	}
	msg := &deliveredMsg{n: 3}
	d, err := oncenats.Process(context.Background(), down, msg, func(context.Context, jetstream.Msg) error { return nil }, &oncenats.Config{MaxRetryBackoff: 3 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, d.RetryAfter, "bounded by MaxRetryBackoff")
}

// The same Nats-Msg-Id in two streams read with one scope names two
// messages: both are processed.
func TestSameMsgIDInTwoStreamsIsTwoKeys(t *testing.T) {
	a, b := newEnv(t, 30*time.Second), newEnv(t, 30*time.Second)
	scope := once.New(memory.New(nil)).Scope("billing")
	a.publish(t, "charge 10", map[string]string{nats.MsgIdHdr: "1"})
	b.publish(t, "ship parcel", map[string]string{nats.MsgIdHdr: "1"})
	runs := 0
	h := func(context.Context, jetstream.Msg) error { runs++; return nil }
	for _, e := range []*env{a, b} {
		d, err := oncenats.Process(context.Background(), scope, e.next(t), h, nil)
		require.NoError(t, err)
		require.Equal(t, consume.ReasonDone, d.Reason, "stream %s: %v (%v)", e.stream, d, d.Err)
		e.settled(t)
	}
	require.Equal(t, 2, runs)
}

func TestMsgIDKeyIsStreamAndID(t *testing.T) {
	key, err := oncenats.MsgIDKey(&deliveredMsg{})
	require.NoError(t, err)
	require.Equal(t, "ORDERS.order-5", key)
	keys := map[string]bool{}
	for _, c := range []struct{ stream, id string }{
		{"A", strings.Repeat("x", 254)}, {"AB", strings.Repeat("x", 253)}, // both over 255 joined
		{"A", strings.Repeat("x", 253)}, // exactly 255
		{"A", "B.c"}, {"AB", "c"}, {"A", "Bc"},
	} {
		key, err := oncenats.MsgIDKey(&streamMsg{stream: c.stream, id: c.id})
		require.NoError(t, err)
		require.NoError(t, once.ValidateKey(key))
		require.False(t, keys[key], "%q twice", key)
		keys[key] = true
	}
	_, err = oncenats.MsgIDKey(&streamMsg{stream: "A", id: "bad\x01id"})
	require.Error(t, err, "an ID no key may be is refused as before")
	_, err = oncenats.MsgIDKey(&streamMsg{stream: "A"})
	require.ErrorIs(t, err, oncenats.ErrMissingKey)
}

type streamMsg struct {
	jetstream.Msg
	stream, id string
}

func (m *streamMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Stream: m.stream}, nil
}
func (m *streamMsg) Headers() nats.Header { return nats.Header{nats.MsgIdHdr: []string{m.id}} }

// A Config.Key or Config.Fingerprint that panics is a bug of the service,
// not of the message: the message is Nak-ed as consume.ReasonMisconfigured
// with the *ConfigPanicError, backed off, not terminated (nor exhausted by
// MaxDeliveries), so that a bad deploy whose Key panics on every message
// does not dead-letter the stream; once the callback is fixed, the
// messages are processed. A panic in OnDecision is ignored. Under
// HandlerFunc they run on nats.go's goroutine, where a panic would end the
// process.
func TestConfigFuncPanicsAreRecovered(t *testing.T) {
	e := newEnv(t, 30*time.Second)
	scope := once.New(memory.New(nil)).Scope("billing")
	type seen struct {
		payload string
		d       consume.Decision
	}
	decisions := make(chan seen, 1000)
	var broken atomic.Bool
	broken.Store(true)
	cfg := &oncenats.Config{
		Key: func(msg jetstream.Msg) (string, error) {
			if broken.Load() && string(msg.Data()) == "bad key" {
				panic("index out of range")
			}
			return oncenats.MsgIDKey(msg)
		},
		Fingerprint: func(msg jetstream.Msg) once.Fingerprint {
			if broken.Load() && string(msg.Data()) == "bad fp" {
				panic("nil map")
			}
			return oncenats.PayloadFingerprint(msg)
		},
		OnDecision: func(msg jetstream.Msg, d consume.Decision, _ error) {
			decisions <- seen{string(msg.Data()), d}
			panic("logger broke")
		},
		RetryBackoff:  10 * time.Millisecond,
		MaxDeliveries: 1,
	}
	cc, err := e.cons.Consume(oncenats.HandlerFunc(context.Background(), scope, func(context.Context, jetstream.Msg) error { return nil }, cfg))
	require.NoError(t, err)
	defer cc.Stop()
	e.publish(t, "bad key", map[string]string{nats.MsgIdHdr: "a"})
	e.publish(t, "bad fp", map[string]string{nats.MsgIdHdr: "b"})
	e.publish(t, "good", map[string]string{nats.MsgIdHdr: "c"})
	panicked := map[string]string{"bad key": "Key", "bad fp": "Fingerprint"}
	done := map[string]bool{}
	for len(done) < 3 {
		s := <-decisions
		if s.d.Reason == consume.ReasonDone {
			done[s.payload] = true
			continue
		}
		fn, ok := panicked[s.payload]
		require.True(t, ok, "%q: %v", s.payload, s.d)
		require.Equal(t, consume.RetryLater, s.d.Action, "%q: %v", s.payload, s.d)
		require.Equal(t, consume.ReasonMisconfigured, s.d.Reason)
		require.Equal(t, 10*time.Millisecond, s.d.RetryAfter, "backed off as RetryBackoff says")
		var p *oncenats.ConfigPanicError
		require.ErrorAs(t, s.d.Err, &p)
		require.Equal(t, fn, p.Func)
		require.NotEmpty(t, p.Stack)
		delete(panicked, s.payload)
		if len(panicked) == 0 {
			broken.Store(false) // the fix is deployed
		}
	}
	require.Empty(t, panicked)
	e.settled(t)
}

// A shutdown (consume.ReasonCanceled) is Nak-ed after RetryBackoff, whatever
// the delivery count: nothing failed, and the backoff by the delivery count
// parked the message up to MaxRetryBackoff (1 min after six earlier
// deliveries) during a rolling restart.
func TestShutdownIsNakedWithoutTheDeliveryBackoff(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("billing")
	msg := &deliveredMsg{n: 7}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := oncenats.Process(ctx, scope, msg, func(ctx context.Context, _ jetstream.Msg) error {
		cancel() // SIGTERM while the handler runs
		return ctx.Err()
	}, nil)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonCanceled, d.Reason, "decision %v", d)
	require.Equal(t, oncenats.DefaultRetryBackoff, d.RetryAfter)
	require.Equal(t, oncenats.DefaultRetryBackoff, msg.delay, "the Nak's delay")
}

// The Nak of a key in progress elsewhere waits the owner's lease left, at
// most MaxRetryBackoff: under a 1 h lease a duplicate was parked (and
// counted toward MaxAckPending) for the whole hour.
func TestInProgressNakIsCappedByMaxRetryBackoff(t *testing.T) {
	scope := once.New(memory.New(nil), once.WithLease(time.Hour)).Scope("billing")
	release := holdKey(t, scope, "ORDERS.order-5", nil)
	defer release(nil)
	msg := &deliveredMsg{n: 1}
	cfg := &oncenats.Config{Fingerprint: func(jetstream.Msg) once.Fingerprint { return nil }, MaxRetryBackoff: 2 * time.Second}
	d, err := oncenats.Process(context.Background(), scope, msg, func(context.Context, jetstream.Msg) error { return nil }, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonInProgress, d.Reason, "decision %v", d)
	require.Equal(t, 2*time.Second, d.RetryAfter)
	require.Equal(t, 2*time.Second, msg.delay)
	d, err = oncenats.Process(context.Background(), scope, msg, func(context.Context, jetstream.Msg) error { return nil }, &oncenats.Config{Fingerprint: cfg.Fingerprint})
	require.NoError(t, err)
	require.Equal(t, oncenats.DefaultMaxRetryBackoff, d.RetryAfter, "the default cap")
}

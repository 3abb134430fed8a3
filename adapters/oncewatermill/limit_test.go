package oncewatermill_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncewatermill"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/consume"
)

// A message whose handler keeps failing was redelivered forever (backed
// off, at most 1 s apart): the middleware had no delivery limit, unlike
// onceamqp and oncenats. With MaxDeliveries 3 the third failure is
// dead-lettered as consume.ReasonExhausted, returned at once for the poison
// queue, and OnDecision is told; without a poison queue the message comes
// back and each further failure is a dead letter backed off by the dead
// letters' own count.
func TestMaxDeliveriesDeadLettersAFailingMessage(t *testing.T) {
	const ms = time.Millisecond
	cases := map[string]struct {
		h      message.HandlerFunc
		reason consume.Reason
		mws    func(mw message.HandlerMiddleware) []message.HandlerMiddleware
	}{
		"HandlerError": {h: func(*message.Message) ([]*message.Message, error) { return nil, errors.New("db timeout") }, reason: consume.ReasonHandlerError},
		"HandlerPanic": {h: func(*message.Message) ([]*message.Message, error) { panic("cannot parse") }, reason: consume.ReasonHandlerError},
		// middleware.Timeout outside the middleware: the core answers
		// ReasonCanceled for the ended context, but a deadline is no
		// shutdown, so the failure counts.
		"TimeoutOutside": {
			h: func(msg *message.Message) ([]*message.Message, error) {
				<-msg.Context().Done()
				return nil, msg.Context().Err()
			},
			reason: consume.ReasonCanceled,
			mws: func(mw message.HandlerMiddleware) []message.HandlerMiddleware {
				return []message.HandlerMiddleware{middleware.Timeout(ms), mw}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder()
			var mu sync.Mutex
			var decisions []consume.Decision
			scope := once.New(memory.New(nil)).Scope("billing")
			mw := oncewatermill.Middleware(scope, &oncewatermill.Config{MaxDeliveries: 3, RetryBackoff: ms, MaxRetryDelay: 4 * ms,
				OnDecision: func(_ *message.Message, d consume.Decision) { mu.Lock(); decisions = append(decisions, d); mu.Unlock() }})
			mws := []message.HandlerMiddleware{mw}
			if tc.mws != nil {
				mws = tc.mws(mw)
			}
			pubsub := chanRouter(t, append([]message.HandlerMiddleware{rec.middleware}, mws...), tc.h)
			require.NoError(t, pubsub.Publish("orders", message.NewMessage("order-1", []byte("charge 10"))))
			errs := rec.wait(t, 5)
			for i := range 2 {
				var re *oncewatermill.RetryError
				require.ErrorAs(t, errs[i], &re, "delivery %d", i+1)
				require.Equal(t, tc.reason, re.Decision.Reason)
			}
			for i, wait := range []time.Duration{0, ms, 2 * ms} {
				var dl *oncewatermill.DeadLetterError
				require.ErrorAs(t, errs[2+i], &dl, "delivery %d", 3+i)
				require.Equal(t, consume.DeadLetter, dl.Decision.Action)
				require.Equal(t, consume.ReasonExhausted, dl.Decision.Reason)
				require.Equal(t, wait, dl.Wait, "dead letter %d", i+1)
				require.True(t, oncewatermill.IsDeadLetter(errs[2+i]))
				require.Contains(t, dl.Error(), fmt.Sprintf("handler failure %d of at most 3, %s", 3+i, tc.reason))
			}
			mu.Lock()
			defer mu.Unlock()
			require.GreaterOrEqual(t, len(decisions), 5)
			require.Equal(t, consume.ReasonExhausted, decisions[2].Reason, "OnDecision is told")
		})
	}
}

// Over watermill-amqp with a poison queue (the README's set-up), a message
// whose handler always fails is moved to the poison queue on its
// MaxDeliveries-th failure, with the exhausted reason; it was redelivered
// forever.
func TestExhaustedMessageGoesToThePoisonQueue(t *testing.T) {
	var runs atomic.Int64
	scope := once.New(memory.New(nil)).Scope("billing")
	mw := oncewatermill.Middleware(scope, &oncewatermill.Config{MaxDeliveries: 4, RetryBackoff: time.Millisecond})
	r := newRig(t, []message.HandlerMiddleware{mw}, func(*message.Message) ([]*message.Message, error) {
		runs.Add(1)
		return nil, errors.New("provider 503")
	})
	r.publish(t, "m1", "order o1", nil)
	dead := receive(t, r.poison)
	require.Equal(t, "m1", dead.UUID)
	require.Contains(t, dead.Metadata.Get(middleware.ReasonForPoisonedKey), string(consume.ReasonExhausted))
	require.Contains(t, dead.Metadata.Get(middleware.ReasonForPoisonedKey), "provider 503")
	require.EqualValues(t, 4, runs.Load())
	select {
	case out := <-r.outputs:
		t.Fatalf("unexpected output %s", out.UUID)
	default:
	}
}

// A model of the count, on random sequences of deliveries: only the
// handler's failures (error, panic, failure at a Timeout deadline) count
// toward MaxDeliveries; a key in progress elsewhere, a shutdown and a
// misconfiguration never count nor dead-letter the message; an
// acknowledgement resets the count. Each decision and wait is checked
// against the model.
func TestMaxDeliveriesCountsOnlyHandlerFailures(t *testing.T) {
	const base, limit = time.Millisecond, 8 * time.Millisecond
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	scope := once.New(memory.New(nil)).Scope("billing")
	var key string
	var brokenKey bool
	var seen consume.Decision
	for _, maxDeliveries := range []int{1, 2, 3, 5} {
		mw := oncewatermill.Middleware(scope, &oncewatermill.Config{MaxDeliveries: maxDeliveries, RetryBackoff: base, MaxRetryDelay: limit,
			Key: func(*message.Message) (string, error) {
				if brokenKey {
					panic("bad deploy")
				}
				return key, nil
			},
			Fingerprint: func(*message.Message) once.Fingerprint { return nil },
			OnDecision:  func(_ *message.Message, d consume.Decision) { seen = d },
		})
		for m := range 6 {
			key = fmt.Sprintf("max%d-msg%d", maxDeliveries, m)
			// A misconfigured delivery has no key: it is counted under the
			// message's UUID alone, apart.
			var failures, retries, deadLetters, keyless uint64
			steps := rng.IntN(12)
			for step := 0; step <= steps; step++ {
				kind := []string{"error", "panic", "deadline", "in progress", "shutdown", "misconfigured"}[rng.IntN(6)]
				if step == steps {
					kind = "success"
				}
				ctx, cancel := context.WithCancel(context.Background())
				var release func()
				handler := func(msg *message.Message) ([]*message.Message, error) {
					switch kind {
					case "error":
						return nil, errors.New("db timeout")
					case "panic":
						panic("cannot parse")
					case "deadline":
						<-msg.Context().Done()
						return nil, msg.Context().Err()
					case "shutdown":
						cancel()
						return nil, msg.Context().Err()
					}
					return nil, nil
				}
				switch kind {
				case "deadline":
					ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
				case "in progress":
					release = claimElsewhere(t, scope, key)
				case "misconfigured":
					brokenKey = true
				}
				msg := message.NewMessage("uuid-"+key, []byte("x"))
				msg.SetContext(ctx)
				_, err := mw(handler)(msg)
				cancel()
				brokenKey = false
				if release != nil {
					release()
				}
				at := fmt.Sprintf("max %d, %s, step %d (%s)", maxDeliveries, key, step, kind)
				switch kind {
				case "success":
					require.NoError(t, err, at)
					continue
				case "error", "panic", "deadline":
					failures++
				}
				counted := kind == "error" || kind == "panic" || kind == "deadline"
				if counted && failures >= uint64(maxDeliveries) {
					deadLetters++
					var dl *oncewatermill.DeadLetterError
					require.ErrorAs(t, err, &dl, at)
					require.Equal(t, consume.ReasonExhausted, dl.Decision.Reason, at)
					require.Equal(t, consume.ReasonExhausted, seen.Reason, at)
					want := time.Duration(0)
					if deadLetters > 1 {
						want = min(base<<(deadLetters-2), limit)
					}
					require.Equal(t, want, dl.Wait, at)
					continue
				}
				if kind == "misconfigured" {
					keyless++
				} else {
					retries++
				}
				var re *oncewatermill.RetryError
				require.ErrorAs(t, err, &re, at)
				require.Equal(t, consume.RetryLater, seen.Action, at)
				switch kind {
				case "in progress":
					require.Equal(t, consume.ReasonInProgress, re.Decision.Reason, at)
				case "shutdown":
					require.Equal(t, consume.ReasonCanceled, re.Decision.Reason, at)
					require.Zero(t, re.Decision.RetryAfter, at)
				case "misconfigured":
					require.Equal(t, consume.ReasonMisconfigured, re.Decision.Reason, at)
					require.Equal(t, min(base<<(min(keyless, 10)-1), limit), re.Decision.RetryAfter, at)
				default:
					require.Equal(t, min(base<<(min(retries, 10)-1), limit), re.Decision.RetryAfter, at)
				}
			}
		}
	}
}

// claimElsewhere claims key in scope from another consumer, which runs
// until release is called and then succeeds.
func claimElsewhere(t *testing.T, scope once.Scope, key string) (release func()) {
	t.Helper()
	started, rel, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, _ = once.Do(context.Background(), scope, key, nil, func(context.Context) (int, error) {
			close(started)
			<-rel
			return 0, errors.New("the other consumer failed too")
		})
	}()
	<-started
	return func() { close(rel); <-done }
}

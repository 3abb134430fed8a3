package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/internal/testservers"
	"github.com/stagedoor/once/reconcile"
)

// The key of holdKeys(t, store, 3) whose user code panics in the tests
// below; the two others are resolved normally.
const victimScope, victimKey = "shop-1", "order-0001"

var errHookBoom = errors.New("hook boom")

// panicCodec panics when it encodes the victim's value, and is JSON
// otherwise.
type panicCodec struct{}

func (panicCodec) Marshal(v any) ([]byte, error) {
	if v == "charge-"+victimKey {
		panic(errHookBoom)
	}
	return json.Marshal(v)
}

func (panicCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// panicErrorText is a final error whose Error method panics.
type panicErrorText struct{}

func (panicErrorText) Error() string { panic(errHookBoom) }

// panicObserver panics on the victim's event of kind.
func panicObserver(kind once.EventKind) once.Option {
	return once.WithObserver(func(_ context.Context, e once.Event) {
		if e.Key == victimKey && e.Kind == kind {
			panic(errHookBoom)
		}
	})
}

// settledCheck answers every key settled with "charge-<key>".
func settledCheck(_ context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
	return reconcile.Verdict[string]{Settled: true, Value: "charge-" + k.Key}, nil
}

// victimCheck answers the victim with victim and the other keys as
// settledCheck does.
func victimCheck(victim func() (reconcile.Verdict[string], error)) reconcile.Check[string] {
	return func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
		if k.Key == victimKey {
			return victim()
		}
		return settledCheck(ctx, k)
	}
}

// TestReconcilerRecoversPanicsPerKey: a panic in the user code a
// Reconciler runs for one key (the Check, Config.Codec,
// the Keeper's codec, a final error's methods, an observer) does not
// escape Pass, never loses the held record and never resolves it wrongly:
// the key stays held with its hold, unleased (a well-behaved Reconciler
// resolves it next), the report counts it and carries a
// *ReconcilePanicError naming the hook; the other keys are resolved.
func TestReconcilerRecoversPanicsPerKey(t *testing.T) {
	cases := []struct {
		name   string
		opts   []once.Option
		cfg    reconcile.Config
		check  reconcile.Check[string]
		hook   string
		failed int // 1 when the key is left held because of the panic
		errs   int
	}{
		{
			name:  "ReconcileFunc",
			check: victimCheck(func() (reconcile.Verdict[string], error) { panic(errHookBoom) }),
			hook:  "check", failed: 1, errs: 1,
		},
		{
			name:  "Config.Codec",
			cfg:   reconcile.Config{Codec: panicCodec{}},
			check: settledCheck,
			hook:  "encode", failed: 1, errs: 1,
		},
		{
			name:  "Keeper codec",
			opts:  []once.Option{once.WithCodec(panicCodec{})},
			check: settledCheck,
			hook:  "encode", failed: 1, errs: 1,
		},
		{
			name: "final error's Error method",
			check: victimCheck(func() (reconcile.Verdict[string], error) {
				return reconcile.Verdict[string]{Settled: true, Err: once.Final(panicErrorText{})}, nil
			}),
			hook: "encode", failed: 1, errs: 1,
		},
		{
			name:  "observer of an unsettled verdict",
			opts:  []once.Option{panicObserver(once.EventReconciled)},
			check: victimCheck(func() (reconcile.Verdict[string], error) { return reconcile.Verdict[string]{}, nil }),
			hook:  "observer", failed: 0, errs: 1,
		},
		{
			name: "observer of a failed check",
			opts: []once.Option{panicObserver(once.EventReconciled)},
			check: victimCheck(func() (reconcile.Verdict[string], error) {
				return reconcile.Verdict[string]{}, errors.New("provider down")
			}),
			hook: "observer", failed: 1, errs: 2, // the check's error, then the observer's panic
		},
	}
	for storeName, newStore := range testservers.ListerStores() {
		t.Run(storeName, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					store := newStore(t)
					holdKeys(t, store, 3)
					ctx := t.Context()
					rc, err := reconcile.New(once.New(store, tc.opts...), tc.check, tc.cfg)
					require.NoError(t, err)

					rep, err := rc.Pass(ctx)
					require.NoError(t, err, "a panic in user code is no store failure")
					require.Equal(t, 3, rep.Examined)
					require.Equal(t, 2, rep.Resolved, "the other keys are resolved")
					require.Equal(t, 1, rep.LeftHeld)
					require.Equal(t, tc.failed, rep.Failed)
					require.Equal(t, 1, rep.Panicked)
					require.Len(t, rep.Errors, tc.errs)
					last := rep.Errors[len(rep.Errors)-1]
					var p *reconcile.PanicError
					require.ErrorAs(t, last, &p)
					require.Equal(t, tc.hook, p.Hook)
					require.ErrorIs(t, last, errHookBoom, "the panic value, an error, is unwrapped")
					require.NotEmpty(t, p.Stack)
					require.ErrorContains(t, last, victimScope+"/"+victimKey+": ")
					require.ErrorContains(t, last, "panicked")

					rec, err := store.(backends.Admin).Get(ctx, victimScope, victimKey)
					require.NoError(t, err)
					require.NotZero(t, rec.State, "the held record is not lost")
					require.Equal(t, backends.StateHeld, rec.State, "nor resolved")
					require.Equal(t, "timeout", rec.Held.Code)
					require.Nil(t, rec.Outcome)

					// The key was unleased: a well-behaved Reconciler
					// resolves it at once (Redis rounds the unlease up to
					// 1 ms).
					good, err := reconcile.New(once.New(store), settledCheck, reconcile.Config{})
					require.NoError(t, err)
					require.Eventually(t, func() bool {
						rep, err := good.Pass(ctx)
						require.NoError(t, err)
						require.Empty(t, rep.Errors)
						return rep.Resolved == 1
					}, 5*time.Second, 5*time.Millisecond)
					v, err := once.Do(ctx, once.New(store).Scope(victimScope), victimKey, once.Fingerprint("fp"), func(context.Context) (string, error) {
						t.Error("fn ran on a resolved key")
						return "", nil
					})
					require.NoError(t, err)
					require.Equal(t, "charge-"+victimKey, v)
				})
			}
		})
	}
}

// TestReconcilerObserverPanicAfterResolve: an observer that panics on the
// EventResolved of a key does not escape Pass and does not undo the
// resolution: the key is counted resolved and replays its verdict.
func TestReconcilerObserverPanicAfterResolve(t *testing.T) {
	for storeName, newStore := range testservers.ListerStores() {
		t.Run(storeName, func(t *testing.T) {
			store := newStore(t)
			holdKeys(t, store, 3)
			ctx := t.Context()
			keeper := once.New(store, panicObserver(once.EventResolved))
			rc, err := reconcile.New(keeper, settledCheck, reconcile.Config{})
			require.NoError(t, err)
			rep, err := rc.Pass(ctx)
			require.NoError(t, err)
			require.Equal(t, 3, rep.Resolved)
			require.Zero(t, rep.LeftHeld)
			require.Zero(t, rep.Failed)
			require.Equal(t, 1, rep.Panicked)
			require.Len(t, rep.Errors, 1)
			var p *reconcile.PanicError
			require.ErrorAs(t, rep.Errors[0], &p)
			require.Equal(t, "observer", p.Hook)

			rec, err := store.(backends.Admin).Get(ctx, victimScope, victimKey)
			require.NoError(t, err)
			require.NotZero(t, rec.State)
			require.Equal(t, backends.StateCompleted, rec.State)
			v, err := once.Do(ctx, once.New(store).Scope(victimScope), victimKey, once.Fingerprint("fp"), func(context.Context) (string, error) {
				t.Error("fn ran on a resolved key")
				return "", nil
			})
			require.NoError(t, err)
			require.Equal(t, "charge-"+victimKey, v)
		})
	}
}

// TestReconcilerObserverPanicOnAStoreError: an observer that panics on
// the EventStoreError of a failed Resolve does not hide the failure: Pass
// returns the *StoreError, reports the panic, and the key stays held.
func TestReconcilerObserverPanicOnAStoreError(t *testing.T) {
	mem := newReconcileFaults()
	mem.failResolve(errResolveDown)
	holdKeys(t, mem, 3)
	rc, err := reconcile.New(once.New(mem, panicObserver(once.EventStoreError)), settledCheck, reconcile.Config{})
	require.NoError(t, err)
	var rep reconcile.Report
	for rep.Panicked == 0 { // the first key listed that fails ends each pass
		rep, err = rc.Pass(t.Context())
		require.ErrorIs(t, err, errResolveDown)
		var se *once.StoreError
		require.ErrorAs(t, err, &se)
		require.Equal(t, "resolve", se.Op)
		require.Less(t, rep.Examined, 4)
	}
	var p *reconcile.PanicError
	require.ErrorAs(t, rep.Errors[0], &p)
	require.Equal(t, "observer", p.Hook)
	rec, err := mem.Get(t.Context(), victimScope, victimKey)
	require.NoError(t, err)
	require.NotZero(t, rec.State)
	require.Equal(t, backends.StateHeld, rec.State)
}

// TestReconcilerRunSurvivesAPanickingCheck: Run, which calls Pass, does
// not crash on a Check that panics on every call; it returns the
// context's error and the key is still held.
func TestReconcilerRunSurvivesAPanickingCheck(t *testing.T) {
	store := memory.New(nil)
	holdKeys(t, store, 1)
	var calls int
	rc, err := reconcile.New(once.New(store), func(context.Context, reconcile.HeldKey) (reconcile.Verdict[int], error) {
		calls++
		panic("boom")
	}, reconcile.Config{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, rc.Run(ctx, time.Millisecond), context.DeadlineExceeded)
	require.Greater(t, calls, 1, "the key was asked again on later passes")
	rec, err := store.Get(t.Context(), "shop-0", "order-0000")
	require.NoError(t, err)
	require.NotZero(t, rec.State)
	require.Equal(t, backends.StateHeld, rec.State)
}

// unwrapPanicError is an error, returned by a Check, whose Unwrap
// method panics.
type unwrapPanicError struct{}

func (unwrapPanicError) Error() string { return "provider down" }
func (unwrapPanicError) Unwrap() error { panic(errHookBoom) }

// TestReconcilerDoesNotInspectTheCheckError: the Reconciler reports the
// error a Check returns without calling its methods beyond Error
// (user code it would run outside its recovery): an error whose Unwrap
// panics does not escape Pass, and the key is unleased at once; and an
// error that merely wraps a *ReconcilePanicError (of another Reconciler,
// say) is a failure, not a panic of this one.
func TestReconcilerDoesNotInspectTheCheckError(t *testing.T) {
	for name, checkErr := range map[string]error{
		"Unwrap panics":               unwrapPanicError{},
		"wraps a ReconcilePanicError": fmt.Errorf("nested: %w", &reconcile.PanicError{Hook: "check", Value: "elsewhere"}),
	} {
		t.Run(name, func(t *testing.T) {
			store := memory.New(nil)
			holdKeys(t, store, 3)
			ctx := t.Context()
			rc, err := reconcile.New(once.New(store), victimCheck(func() (reconcile.Verdict[string], error) {
				return reconcile.Verdict[string]{}, checkErr
			}), reconcile.Config{})
			require.NoError(t, err)
			var rep reconcile.Report
			require.NotPanics(t, func() { rep, err = rc.Pass(ctx) })
			require.NoError(t, err)
			require.Equal(t, 3, rep.Examined)
			require.Equal(t, 2, rep.Resolved)
			require.Equal(t, 1, rep.LeftHeld)
			require.Equal(t, 1, rep.Failed)
			require.Zero(t, rep.Panicked, "no user code panicked in this Reconciler")
			require.Len(t, rep.Errors, 1)
			require.ErrorContains(t, rep.Errors[0], victimScope+"/"+victimKey+": ")

			good, err := reconcile.New(once.New(store), settledCheck, reconcile.Config{})
			require.NoError(t, err)
			rep, err = good.Pass(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, rep.Resolved, "the key was unleased")
		})
	}
}

// panicJSON is a settled value whose MarshalJSON panics for the victim.
type panicJSON string

func (v panicJSON) MarshalJSON() ([]byte, error) {
	if v == "charge-"+victimKey {
		panic(errHookBoom)
	}
	return json.Marshal(string(v))
}

// TestReconcilerRecoversAPanickingMarshalJSON: a settled verdict whose
// value's MarshalJSON panics (while the Keeper's JSON codec encodes it) is
// recovered as a *ReconcilePanicError of Hook "encode": the key is left
// held with its hold and unleased, counted in Failed and Panicked, and
// the other keys, those listed after it included, are still settled.
func TestReconcilerRecoversAPanickingMarshalJSON(t *testing.T) {
	for storeName, newStore := range testservers.ListerStores() {
		t.Run(storeName, func(t *testing.T) {
			store := newStore(t)
			holdKeys(t, store, 3)
			ctx := t.Context()
			var asked []string
			check := func(_ context.Context, k reconcile.HeldKey) (reconcile.Verdict[panicJSON], error) {
				asked = append(asked, k.Key)
				return reconcile.Verdict[panicJSON]{Settled: true, Value: panicJSON("charge-" + k.Key)}, nil
			}
			rc, err := reconcile.New(once.New(store), check, reconcile.Config{})
			require.NoError(t, err)
			rep, err := rc.Pass(ctx)
			require.NoError(t, err, "a panic in user code is no store failure")
			require.Len(t, asked, 3, "every key was asked, those after the victim too")
			require.Equal(t, 3, rep.Examined)
			require.Equal(t, 2, rep.Resolved)
			require.Equal(t, 1, rep.LeftHeld)
			require.Equal(t, 1, rep.Failed)
			require.Equal(t, 1, rep.Panicked)
			require.Len(t, rep.Errors, 1)
			var p *reconcile.PanicError
			require.ErrorAs(t, rep.Errors[0], &p)
			require.Equal(t, "encode", p.Hook)
			require.ErrorIs(t, rep.Errors[0], errHookBoom)
			require.ErrorContains(t, rep.Errors[0], victimScope+"/"+victimKey+": ")

			rec, err := store.(backends.Admin).Get(ctx, victimScope, victimKey)
			require.NoError(t, err)
			require.NotZero(t, rec.State)
			require.Equal(t, backends.StateHeld, rec.State)
			require.Equal(t, "timeout", rec.Held.Code)

			good, err := reconcile.New(once.New(store), settledCheck, reconcile.Config{})
			require.NoError(t, err)
			require.Eventually(t, func() bool { // Redis rounds the unlease up to 1 ms
				rep, err := good.Pass(ctx)
				require.NoError(t, err)
				return rep.Resolved == 1
			}, 5*time.Second, 5*time.Millisecond, "the key was unleased")
		})
	}
}

// TestReconcilerDoesNotRecoverAStorePanic: as documented, a panic in the
// store (its LeaseHeld or its Resolve) is not recovered: it escapes Pass
// with its value; the Reconciler stays usable, and its next Pass resumes
// after the key, without calling the store for that key again. The victim
// is the first key listed, so that keys are listed after it whatever the
// memory store's order.
func TestReconcilerDoesNotRecoverAStorePanic(t *testing.T) {
	for name, set := range map[string]func(f *reconcileFaults, victim string){
		"LeaseHeld": func(f *reconcileFaults, victim string) {
			f.leaseHeld = func(p backends.LeaseHeldParams) error {
				if p.Key == victim {
					panic(errHookBoom)
				}
				return nil
			}
		},
		"Resolve": func(f *reconcileFaults, victim string) {
			f.resolve = func(p backends.ResolveParams) error {
				if p.Key == victim {
					panic(errHookBoom)
				}
				return nil
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			store := newReconcileFaults()
			holdKeys(t, store, 3)
			page, err := store.List(t.Context(), backends.ListParams{State: backends.StateHeld, Limit: 3})
			require.NoError(t, err)
			require.Len(t, page.Records, 3)
			victim := page.Records[0].Key
			store.set(func(f *reconcileFaults) { set(f, victim) })
			rc, err := reconcile.New(once.New(store), settledCheck, reconcile.Config{})
			require.NoError(t, err)
			var leased []string // the keys LeaseHeld was called for, in order
			store.set(func(f *reconcileFaults) {
				panicking := f.leaseHeld
				f.leaseHeld = func(p backends.LeaseHeldParams) error {
					if p.Lease > 1 {
						leased = append(leased, p.Key)
					}
					if panicking != nil {
						return panicking(p)
					}
					return nil
				}
			})
			require.PanicsWithValue(t, errHookBoom, func() { _, _ = rc.Pass(t.Context()) })
			require.Equal(t, []string{victim}, leased, "the panic was the victim's, listed first")

			store.set(func(f *reconcileFaults) {
				f.resolve = nil
				f.leaseHeld = func(p backends.LeaseHeldParams) error {
					if p.Lease > 1 {
						leased = append(leased, p.Key)
					}
					return nil
				}
			})
			rep, err := rc.Pass(t.Context())
			require.NoError(t, err)
			require.True(t, rep.Done)
			require.Equal(t, 2, rep.Examined, "the keys listed after the victim")
			require.Equal(t, 2, rep.Resolved)
			require.Equal(t, []string{victim, page.Records[1].Key, page.Records[2].Key}, leased, "the victim is not called again")
		})
	}
}

package faults

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// dropToxic is the name of the reply-drop toxic.
const dropToxic = "drop-reply"

// dropReply drops the reply of the next call of one operation: the
// request reaches the store and executes, the answer never comes back (a
// downstream "timeout" toxic that discards the reply and closes the
// connection after 300 ms). The toxic is removed hold after it was added,
// or, when hold is 0, only by lift.
type dropReply struct {
	backends.Store
	proxy *netProxy
	op    string
	armed atomic.Bool
	hold  time.Duration
}

func (d *dropReply) arm() { d.armed.Store(true) }

// lift removes the toxic (a missing one is no error).
func (d *dropReply) lift() { d.proxy.remove(dropToxic) }

func (d *dropReply) maybeDrop(op string) {
	if op != d.op || !d.armed.CompareAndSwap(true, false) {
		return
	}
	if err := d.proxy.add(dropToxic, "timeout", "downstream", map[string]any{"timeout": 300}); err != nil {
		panic(err)
	}
	if d.hold > 0 {
		time.AfterFunc(d.hold, d.lift)
	}
}

func (d *dropReply) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	d.maybeDrop("claim")
	return d.Store.Claim(ctx, p)
}

func (d *dropReply) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	d.maybeDrop("complete")
	return d.Store.Complete(ctx, p)
}

// lostClaimCase is one way the reply of an executed claim gets lost.
type lostClaimCase struct {
	name string
	// hold is how long the toxic stays (0: until the call returns, or
	// until the driver redials when resend is set).
	hold time.Duration
	// resend lifts the toxic when go-redis dials a new connection to re-send
	// the command, so the re-sent claim is answered.
	resend bool
	// fresh is how many new keys the store claims first, so that the
	// claim sends its create alone (a Redis store does after 8 new keys in
	// a row); 0 leaves it on the pipeline.
	fresh   int
	timeout time.Duration // the caller's deadline for the first Do
	// want is the outcome this case forces: lostClaimFailed, lostClaimRan,
	// or "" when it depends on timing (the driver's re-send may come before
	// or after the toxic is gone).
	want string
}

// The two correct answers to a claim whose reply was lost.
const (
	// Do fails closed (*StoreError, fn does not run); the orphaned claim
	// blocks the key until its lease ends, then the key runs fn once.
	lostClaimFailed = "store error, no fn"
	// The driver re-sent the claim (go-redis retries commands after a
	// broken connection); the claim is idempotent for the same owner token,
	// so fn ran once, the outcome is recorded, and it replays.
	lostClaimRan = "re-sent claim answered, fn ran once"
)

// A reply lost after the store executed the request: the claim or the
// outcome exists, the client never heard of it.
//
//   - claim: either Do fails closed (*StoreError, no fn; the orphaned claim
//     blocks the key until its lease ends, then the key runs fn once), or
//     the driver re-sent the claim once the fault lifted, the store
//     recognised its owner token, and fn ran exactly once with its outcome
//     recorded. Which one happens depends on when the fault lifts; the
//     claim-held and claim-resent cases force each. Anything else — fn
//     twice, a success that is not recorded, a StoreError after fn ran —
//     fails.
//   - complete: the outcome is stored although the owner got no answer;
//     Do must not lose it and fn must not run again.
func TestReplyDroppedAfterExecution(t *testing.T) {
	const lease = 2 * time.Second
	for _, backend := range []string{"postgres", "redis"} {
		cases := []lostClaimCase{
			{name: "claim", hold: 500 * time.Millisecond, timeout: 600 * time.Millisecond},
			{name: "claim-held", timeout: 600 * time.Millisecond, want: lostClaimFailed},
		}
		if backend == "redis" {
			// pgx never re-sends a statement whose reply was lost, so only
			// go-redis has this interleaving.
			cases = append(cases,
				lostClaimCase{name: "claim-resent", resend: true, timeout: 5 * time.Second, want: lostClaimRan},
				lostClaimCase{name: "claim-resent-alone", resend: true, fresh: 8, timeout: 5 * time.Second, want: lostClaimRan})
		}
		for _, c := range cases {
			t.Run(backend+"/"+c.name, func(t *testing.T) {
				lostClaimReply(t, backend, c, lease)
			})
		}
		t.Run(backend+"/complete", func(t *testing.T) {
			st, p := viaProxy(t, backend, 1) // one connection, its statements prepared by warm()
			const hold = 500 * time.Millisecond
			d := &dropReply{Store: st.store, proxy: p, op: "complete", hold: hold}
			scope := once.New(d, once.WithLease(lease)).Scope("drop")
			var runs atomic.Int64
			fn := func(context.Context) (string, error) { runs.Add(1); return "v1", nil }
			warm(t, scope)
			d.arm()
			out, firstErr := once.DoOutcome(context.Background(), scope, "k", nil, fn)
			switch {
			case firstErr == nil && out.Value == "v1" && out.Status == once.Recorded:
				// The re-sent Complete (the core's or the driver's) found its
				// own outcome and reported it applied.
			case errors.Is(firstErr, once.ErrOutcomeUnrecorded) && out.Value == "v1" && out.Status == once.Unrecorded:
				// Every attempt lost its reply: the core could not confirm the
				// write and says so; the replay below shows it landed.
			default:
				// ErrLeaseLost here would claim "not stored" for a stored
				// outcome (a Complete that is not idempotent for its owner).
				t.Fatalf("after a lost completion reply: first Do %+v, %v (%s); want the value recorded, or ErrOutcomeUnrecorded", out, firstErr, errKindOrNil(firstErr))
			}
			time.Sleep(hold + 200*time.Millisecond) // the toxic is gone
			again, err := once.DoOutcome(context.Background(), scope, "k", nil, fn)
			if err != nil || again.Value != "v1" || again.Status != once.Replayed {
				t.Errorf("after a lost completion reply: %+v, %v", again, err)
			}
			requireRecord(t, st.store, "drop", "k", backends.StateCompleted)
			if n := runs.Load(); n != 1 {
				t.Errorf("fn ran %d times", n)
			}
			summary.note("%s, reply to Complete dropped: first Do → %v err=%v; next Do replays it; fn ran %d time", backend, out.Status, errKindOrNil(firstErr), runs.Load())
		})
	}
}

// lostClaimReply drops the reply of one executed claim as c says, accepts
// exactly the two correct outcomes and follows each to its end.
func lostClaimReply(t *testing.T, backend string, c lostClaimCase, lease time.Duration) {
	st, p := viaProxy(t, backend, 1) // one connection, its statements prepared by warm()
	d := &dropReply{Store: st.store, proxy: p, op: "claim", hold: c.hold}
	var redial *liftOnRedial
	if c.resend {
		redial = &liftOnRedial{lift: d.lift}
		st.rdb.AddHook(redial)
	}
	scope := once.New(d, once.WithLease(lease)).Scope("drop")
	var runs atomic.Int64
	fn := func(context.Context) (string, error) { runs.Add(1); return "v1", nil }
	warm(t, scope)
	for i := range c.fresh {
		if _, err := once.Do(context.Background(), scope, "fresh"+strconv.Itoa(i), nil, fn); err != nil {
			t.Fatalf("warm-up: %v", err)
		}
	}
	runs.Store(0)
	var scripts, claims int64
	if st.rdb != nil {
		scripts, claims = scriptCalls(t, st.rdb), commandCalls(t, st.rdb, "pttl")
	}
	if redial != nil {
		redial.armed.Store(true)
	}
	d.arm()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	v, err := once.Do(ctx, scope, "k", nil, fn)
	cancel()
	if c.hold == 0 {
		d.lift()
	}
	ran := runs.Load()
	var got string
	var se *once.StoreError
	switch {
	case errors.As(err, &se) && ran == 0:
		got = lostClaimFailed
	case err == nil && v == "v1" && ran == 1:
		got = lostClaimRan
	default:
		t.Fatalf("lost claim reply: got %q, %v (%s), %d runs; want a *StoreError and no fn, or the value and exactly one run", v, err, errKindOrNil(err), ran)
	}
	if c.want != "" && got != c.want {
		t.Fatalf("lost claim reply (%s): got %q (%v, %d runs), want %q", c.name, got, err, ran, c.want)
	}
	resent := ""
	if redial != nil {
		if !redial.lifted.Load() {
			t.Fatalf("go-redis never redialed: the claim was not re-sent")
		}
		// The claim executed twice on the server (the lost one and the
		// re-send): the pipeline (PTTL + SET NX GET, no script), or with
		// fresh the create alone (SET NX), whose re-send, finding a
		// record, sent the pipeline. The claim that found the caller's
		// own claim then ran claim.lua (its PTTL included) for the claim's
		// checkpoints; then Complete's script: fn still ran once.
		want, why := int64(3), "claim, re-sent claim, claim.lua"
		if c.fresh > 0 {
			want, why = 2, "the pipeline after the re-sent create, claim.lua"
		}
		if n := commandCalls(t, st.rdb, "pttl") - claims; n != want {
			t.Errorf("%d PTTLs ran on the server, want %d (%s)", n, want, why)
		}
		if n := scriptCalls(t, st.rdb) - scripts; n != 2 {
			t.Errorf("%d scripts ran on the server, want 2 (claim.lua for the checkpoints, complete)", n)
		}
		resent = "; the server ran the claim twice (the lost one and the re-send), then Complete"
	}
	if got == lostClaimRan {
		requireRecord(t, st.store, "drop", "k", backends.StateCompleted)
		out, err := once.DoOutcome(context.Background(), scope, "k", nil, fn)
		if err != nil || out.Value != "v1" || out.Status != once.Replayed {
			t.Fatalf("replay after the re-sent claim: %+v, %v", out, err)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("fn ran %d times", n)
		}
		summary.note("%s, claim reply dropped after the claim executed (%s): Do → %s%s; the next Do replays it; fn ran %d time", backend, c.name, got, resent, runs.Load())
		return
	}
	// The claim executed although its reply was lost: an orphaned pending
	// record, nothing recorded.
	time.Sleep(200 * time.Millisecond) // the toxic is gone
	requireRecord(t, st.store, "drop", "k", backends.StatePending)
	_, err = once.Do(context.Background(), scope, "k", nil, fn)
	orphan := errors.Is(err, once.ErrInProgress)
	if !orphan && (err != nil || runs.Load() != 1) {
		// Past its lease (a slow machine) the orphan is taken over and runs
		// fn once; anything else is wrong.
		t.Fatalf("right after the lost claim: %v, %d runs; want ErrInProgress, or a takeover running fn once", err, runs.Load())
	}
	if err := elapse(context.Background(), st.store, lease+750*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	v, err = once.Do(context.Background(), scope, "k", nil, fn)
	if err != nil || v != "v1" {
		t.Fatalf("past lease + slack: %q, %v", v, err)
	}
	requireRecord(t, st.store, "drop", "k", backends.StateCompleted)
	if n := runs.Load(); n != 1 {
		t.Errorf("fn ran %d times", n)
	}
	summary.note("%s, claim reply dropped after the claim executed (%s): Do → %s; orphaned claim seen as in progress: %v; claimable after lease + slack; fn ran %d time", backend, c.name, got, orphan, runs.Load())
}

// requireRecord fails unless the store holds a live record of (scope,
// key) in state want.
func requireRecord(t *testing.T, st backends.Store, scope, key string, want backends.State) {
	t.Helper()
	admin, ok := st.(backends.Admin)
	if !ok {
		t.Fatalf("%T has no Get", st)
	}
	// A connection the fault broke may still fail a call or two: retry
	// store errors briefly, the question is the record, not the network.
	var rec backends.Record
	var err error
	for range 20 {
		if rec, err = admin.Get(context.Background(), scope, key); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || rec.State != want {
		t.Fatalf("record of %s/%s: %+v err=%v; want state %v", scope, key, rec, err, want)
	}
}

func warm(t *testing.T, scope once.Scope) {
	t.Helper()
	if _, err := once.Do(context.Background(), scope, "warm", nil, func(context.Context) (int, error) { return 1, nil }); err != nil {
		t.Fatalf("warm-up: %v", err)
	}
}

func errKindOrNil(err error) string {
	if err == nil {
		return "nil"
	}
	return errKind(err)
}

package backendtest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stagedoor/once/backends"
)

// The model-based test drives a store with random sequences of Claim,
// Complete, Renew, Release, Resolve, Admin Delete and Get, and the passage
// of time, over a few keys and owners, with leases and retentions that are
// either tiny (1 ns to 1 ms) or huge (an hour to math.MaxInt64), and
// checks every result against a reference model of the contract.
//
// Time passes for real on a server, so the model never guesses a close
// boundary: a huge duration never ends during a run, and a tiny one has
// surely ended after the next "advance" step (which waits on the store's
// clock). Between its write and that step a tiny deadline may or may not
// have passed; the model then keeps every state the contract allows and
// lets the store's answer decide, so an answer is accepted only if some
// consistent timing explains it.

var longModel = flag.Bool("backendtest.long", false, "run the model-based store test with many more seeds and operations")

// modelConfig returns how many seeds to run and how many operations each.
func modelConfig() (seeds []uint64, opsPerSeed int) {
	nSeeds, opsPerSeed := 16, 120
	if *longModel {
		nSeeds, opsPerSeed = 64, 2000
	}
	if v, err := strconv.Atoi(os.Getenv("ONCE_MODEL_OPS")); err == nil && v > 0 {
		opsPerSeed = v
	}
	if v, err := strconv.Atoi(os.Getenv("ONCE_MODEL_SEEDS")); err == nil && v > 0 {
		nSeeds = v
	}
	if v, err := strconv.ParseUint(os.Getenv("ONCE_MODEL_SEED"), 10, 64); err == nil {
		return []uint64{v}, opsPerSeed
	}
	for i := range nSeeds {
		seeds = append(seeds, uint64(i+1))
	}
	return seeds, opsPerSeed
}

func exerciseModel(t *testing.T, newStore NewStore) {
	seeds, n := modelConfig()
	for _, seed := range seeds {
		t.Run("Seed"+strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			e := setup(t, newStore)
			ops := generate(rand.New(rand.NewPCG(seed, 0x0ace)), n)
			failed := runModel(e, ops)
			if failed == nil {
				return
			}
			minimal, why := shrink(e, ops[:failed.index+1], failed)
			var b strings.Builder
			for i, o := range minimal {
				fmt.Fprintf(&b, "\n  %3d %s", i, o)
			}
			t.Fatalf("model check failed for seed %d (replay with ONCE_MODEL_SEED=%d ONCE_MODEL_OPS=%d)\n%s\nminimal sequence (%d of %d operations):%s",
				seed, seed, n, why.msg, len(minimal), len(ops), b.String())
		})
	}
}

// ---- operations ----

type opKind uint8

const (
	opClaim opKind = iota
	opComplete
	opRenew
	opRelease
	opResolve
	opDelete
	opGet
	opAdvance
)

var opNames = [...]string{"Claim", "Complete", "Renew", "Release", "Resolve", "Delete", "Get", "Advance"}

type op struct {
	kind      opKind
	key       string
	owner     string
	fp        string
	outcome   string
	lease     time.Duration
	retention time.Duration
}

func (o op) String() string {
	switch o.kind {
	case opClaim:
		return fmt.Sprintf("Claim(%s, owner=%s, fp=%q, lease=%v, retention=%v)", o.key, o.owner, o.fp, o.lease, o.retention)
	case opComplete:
		return fmt.Sprintf("Complete(%s, owner=%s, outcome=%q, retention=%v)", o.key, o.owner, o.outcome, o.retention)
	case opRenew:
		return fmt.Sprintf("Renew(%s, owner=%s, lease=%v)", o.key, o.owner, o.lease)
	case opRelease:
		return fmt.Sprintf("Release(%s, owner=%s)", o.key, o.owner)
	case opResolve:
		return fmt.Sprintf("Resolve(%s, owner=%q, fp=%q, outcome=%q, retention=%v)", o.key, o.owner, o.fp, o.outcome, o.retention)
	case opDelete, opGet:
		return fmt.Sprintf("%s(%s)", opNames[o.kind], o.key)
	default:
		return "Advance (the store's clock passes every tiny duration)"
	}
}

var (
	modelKeys      = []string{"m0", "m1", "m2"}
	claimOwners    = []string{"owner-a", "owner-b", "owner-c"}
	resolveOwners  = []string{"resolver-a", "resolver-b", ""}
	modelFPs       = []string{"", "fp-x", "fp-y"}
	modelOutcomes  = []string{"v1", "v2"}
	tinyDurations  = []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond}
	hugeDurations  = []time.Duration{time.Hour, 100 * 365 * 24 * time.Hour, 1 << 62, math64}
	tinyEndsWithin = 2 * time.Millisecond // an Advance waits this long on the store's clock
)

func isHuge(d time.Duration) bool { return d >= time.Hour }

func generate(r *rand.Rand, n int) []op {
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	dur := func() time.Duration {
		if r.IntN(100) < 35 {
			return tinyDurations[r.IntN(len(tinyDurations))]
		}
		return hugeDurations[r.IntN(len(hugeDurations))]
	}
	lastClaimer := map[string]string{}
	owner := func(key string) string {
		if o, ok := lastClaimer[key]; ok && r.IntN(100) < 70 {
			return o
		}
		return pick(claimOwners)
	}
	var ops []op
	for len(ops) < n {
		key := pick(modelKeys)
		var o op
		switch w := r.IntN(100); {
		case w < 10 && len(ops) > 0 && ops[len(ops)-1].kind < opGet:
			// A driver's re-send of the previous write, reply lost.
			o = ops[len(ops)-1]
		case w < 38:
			o = op{kind: opClaim, key: key, owner: pick(claimOwners), fp: pick(modelFPs), lease: dur(), retention: dur()}
			lastClaimer[key] = o.owner
		case w < 52:
			o = op{kind: opComplete, key: key, owner: owner(key), outcome: pick(modelOutcomes), retention: dur()}
		case w < 62:
			o = op{kind: opRenew, key: key, owner: owner(key), lease: dur()}
		case w < 69:
			o = op{kind: opRelease, key: key, owner: owner(key)}
		case w < 79:
			o = op{kind: opResolve, key: key, owner: pick(resolveOwners), fp: pick(modelFPs), outcome: pick(modelOutcomes), retention: dur()}
		case w < 83:
			o = op{kind: opDelete, key: key}
		case w < 91:
			o = op{kind: opGet, key: key}
		default:
			o = op{kind: opAdvance}
		}
		ops = append(ops, o)
	}
	return ops
}

// ---- the reference model ----

// deadline is when a lease or a record ends, symbolically: never within a
// run (huge), or within the epoch it was set in (an epoch ends with each
// Advance). epoch -1 means "observed to have passed".
type deadline struct {
	huge  bool
	epoch int
}

type tri uint8

const (
	live tri = iota
	passed
	maybe
)

func (d deadline) at(epoch int) tri {
	switch {
	case d.huge:
		return live
	case d.epoch < epoch:
		return passed
	default:
		return maybe
	}
}

func later(a, b deadline) deadline {
	if a.huge || b.huge {
		return deadline{huge: true}
	}
	return deadline{epoch: max(a.epoch, b.epoch)}
}

func deadlineOf(d time.Duration, epoch int) deadline {
	if isHuge(d) {
		return deadline{huge: true}
	}
	return deadline{epoch: epoch}
}

var gone = deadline{epoch: -1}

// mrec is the model of one key's record. The zero value is absent.
type mrec struct {
	state   backends.State // 0: absent
	owner   string
	fp      string
	outcome string
	lease   deadline // pending only
	expiry  deadline // pending: at least the lease end (decision A)
}

// world is one timing consistent with the model: the record as it is now,
// and whether a pending record's lease is live.
type world struct {
	rec       mrec
	leaseLive bool
}

func (r mrec) worlds(epoch int) []world {
	if r.state == 0 {
		return []world{{}}
	}
	var ws []world
	exp := r.expiry.at(epoch)
	if exp != live {
		ws = append(ws, world{}) // expired: absent
	}
	if exp == passed {
		return ws
	}
	if r.state == backends.StateCompleted {
		return append(ws, world{rec: r})
	}
	if l := r.lease.at(epoch); l != passed {
		ws = append(ws, world{rec: r, leaseLive: true})
	}
	if r.lease.at(epoch) != live {
		lapsed := r
		lapsed.lease = gone
		ws = append(ws, world{rec: lapsed})
	}
	return ws
}

// leaseClass buckets a reported lease: 0 lapsed, 1 live and short (a tiny
// lease), 2 live and long (a huge lease; the shortest is an hour).
func leaseClass(d time.Duration) int {
	switch {
	case d <= 0:
		return 0
	case d <= 30*time.Minute:
		return 1
	default:
		return 2
	}
}

// result is what an operation reported, normalised so that the model's
// expectation and the store's answer compare with ==.
type result struct {
	ok, tookOver bool
	state        backends.State
	fp, outcome  string
	lease        int
}

func (r result) String() string {
	if r.state == 0 {
		return fmt.Sprintf("{ok=%v tookOver=%v}", r.ok, r.tookOver)
	}
	return fmt.Sprintf("{ok=%v existing %v fp=%q outcome=%q leaseClass=%d}", r.ok, r.state, r.fp, r.outcome, r.lease)
}

func existingResult(w world) result {
	r := result{state: w.rec.state, fp: w.rec.fp, outcome: w.rec.outcome}
	if w.rec.state == backends.StatePending && w.leaseLive {
		r.lease = 1
		if w.rec.lease.huge {
			r.lease = 2
		}
	}
	return r
}

func boundFP(stored, given string) string {
	if given == "" {
		return stored
	}
	return given
}

func fpMatch(stored, given string) bool { return stored == "" || given == "" || stored == given }

// apply returns what the contract says o reports in world w, and the
// record after it.
func apply(w world, o op, epoch int) (result, mrec) {
	r := w.rec
	pending, completed := r.state == backends.StatePending, r.state == backends.StateCompleted
	switch o.kind {
	case opClaim:
		newClaim := func(fp string) mrec {
			lease := deadlineOf(o.lease, epoch)
			return mrec{state: backends.StatePending, owner: o.owner, fp: fp, lease: lease, expiry: later(lease, deadlineOf(o.retention, epoch))}
		}
		switch {
		case r.state == 0:
			return result{ok: true}, newClaim(o.fp)
		case pending && r.owner == o.owner:
			return result{ok: true}, r // a re-send: nothing changes
		case pending && !w.leaseLive && fpMatch(r.fp, o.fp):
			return result{ok: true, tookOver: true}, newClaim(boundFP(r.fp, o.fp))
		default:
			return existingResult(w), r
		}
	case opComplete:
		switch {
		case completed && r.owner == o.owner && r.outcome == o.outcome:
			return result{ok: true}, r
		case pending && r.owner == o.owner:
			return result{ok: true}, mrec{state: backends.StateCompleted, owner: r.owner, fp: r.fp, outcome: o.outcome, expiry: deadlineOf(o.retention, epoch)}
		}
		return result{}, r
	case opRenew:
		if pending && r.owner == o.owner {
			n := r
			n.lease = deadlineOf(o.lease, epoch)
			n.expiry = later(r.expiry, n.lease)
			return result{ok: true}, n
		}
		return result{}, r
	case opRelease:
		if pending && r.owner == o.owner {
			return result{ok: true}, mrec{}
		}
		return result{}, r
	case opResolve:
		resolved := func(fp string) mrec {
			return mrec{state: backends.StateCompleted, owner: o.owner, fp: fp, outcome: o.outcome, expiry: deadlineOf(o.retention, epoch)}
		}
		switch {
		case r.state == 0:
			return result{ok: true}, resolved(o.fp)
		case pending && fpMatch(r.fp, o.fp):
			return result{ok: true}, resolved(boundFP(r.fp, o.fp))
		case completed && o.owner != "" && r.owner == o.owner && r.outcome == o.outcome:
			return result{ok: true}, r
		default:
			return existingResult(w), r
		}
	case opDelete:
		return result{ok: r.state != 0}, mrec{}
	case opGet:
		if r.state == 0 {
			return result{}, r
		}
		res := existingResult(w)
		res.ok = true
		return res, r
	}
	panic("unreachable")
}

// ---- running against the store ----

type modelFailure struct {
	index int
	msg   string
}

// do runs o on the store and normalises its answer.
func do(e *env, o op) (result, error) {
	s, ctx := e.store, e.ctx
	bytesOf := func(s string) []byte {
		if s == "" {
			return nil
		}
		return []byte(s)
	}
	fromRecord := func(rec backends.Record) result {
		r := result{state: rec.State, fp: string(rec.Fingerprint), outcome: string(rec.Outcome)}
		if rec.State == backends.StatePending {
			r.lease = leaseClass(rec.LeaseRemaining)
		}
		return r
	}
	switch o.kind {
	case opClaim:
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: e.scope, Key: o.key, Fingerprint: bytesOf(o.fp), Owner: o.owner, Lease: o.lease, Retention: o.retention})
		if err != nil || r.Claimed {
			return result{ok: r.Claimed, tookOver: r.TookOver}, err
		}
		return fromRecord(r.Existing), nil
	case opComplete:
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: e.scope, Key: o.key, Owner: o.owner, Outcome: []byte(o.outcome), Retention: o.retention})
		return result{ok: ok}, err
	case opRenew:
		ok, err := s.Renew(ctx, backends.RenewParams{Scope: e.scope, Key: o.key, Owner: o.owner, Lease: o.lease})
		return result{ok: ok}, err
	case opRelease:
		ok, err := s.Release(ctx, backends.ReleaseParams{Scope: e.scope, Key: o.key, Owner: o.owner})
		return result{ok: ok}, err
	case opResolve:
		r, err := s.Resolve(ctx, backends.ResolveParams{Scope: e.scope, Key: o.key, Fingerprint: bytesOf(o.fp), Owner: o.owner, Outcome: []byte(o.outcome), Retention: o.retention})
		if err != nil || r.Resolved {
			return result{ok: r.Resolved}, err
		}
		return fromRecord(r.Existing), nil
	case opDelete:
		ok, err := s.(backends.Admin).Delete(ctx, e.scope, o.key)
		return result{ok: ok}, err
	case opGet:
		rec, expiresIn, found, err := s.(backends.Admin).Get(ctx, e.scope, o.key)
		if err != nil || !found {
			return result{}, err
		}
		if expiresIn < 0 {
			return result{}, fmt.Errorf("a live record reported by Get expires in %v", expiresIn)
		}
		if rec.State == backends.StatePending && rec.LeaseRemaining > 2*time.Millisecond && expiresIn < rec.LeaseRemaining-2*time.Millisecond {
			return result{}, fmt.Errorf("a pending record expires (in %v) before its lease ends (in %v)", expiresIn, rec.LeaseRemaining)
		}
		r := fromRecord(rec)
		r.ok = true
		return r, nil
	}
	panic("unreachable")
}

// runModel runs ops on a fresh scope of e's store and returns the first
// disagreement with the model, or nil.
func runModel(e *env, ops []op) *modelFailure {
	e.scope = Scope(e.t)
	_, isAdmin := e.store.(backends.Admin)
	epoch := 0
	states := map[string][]mrec{}
	for i, o := range ops {
		if o.kind == opAdvance {
			e.elapse(tinyEndsWithin)
			epoch++
			continue
		}
		if (o.kind == opDelete || o.kind == opGet) && !isAdmin {
			continue
		}
		got, err := do(e, o)
		if err != nil {
			return &modelFailure{i, fmt.Sprintf("operation %d, %s: %v", i, o, err)}
		}
		var next []mrec
		var expected []string
		for _, cand := range states[o.key] {
			for _, w := range cand.worlds(epoch) {
				want, after := apply(w, o, epoch)
				expected = append(expected, want.String())
				if want == got && !contains(next, after) {
					next = append(next, after)
				}
			}
		}
		if len(states[o.key]) == 0 {
			want, after := apply(world{}, o, epoch)
			expected = append(expected, want.String())
			if want == got {
				next = append(next, after)
			}
		}
		if len(next) == 0 {
			return &modelFailure{i, fmt.Sprintf("operation %d, %s: the store reported %v; the contract allows %s",
				i, o, got, strings.Join(dedupe(expected), " or "))}
		}
		states[o.key] = next
	}
	return nil
}

func contains(s []mrec, r mrec) bool {
	for _, x := range s {
		if x == r {
			return true
		}
	}
	return false
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// shrink removes operations from a failing sequence while it still fails
// (each attempt on a fresh scope), and returns the shortest it found with
// its failure. It stops after a bounded number of attempts.
func shrink(e *env, ops []op, failure *modelFailure) ([]op, *modelFailure) {
	const maxAttempts = 300
	attempts := 0
	for size := len(ops) / 2; size >= 1 && attempts < maxAttempts; {
		reduced := false
		for start := 0; start+size <= len(ops) && attempts < maxAttempts; {
			cand := append(append([]op(nil), ops[:start]...), ops[start+size:]...)
			attempts++
			if f := runModel(e, cand); f != nil {
				ops, failure, reduced = cand[:f.index+1], f, true
				continue
			}
			start += size
		}
		if !reduced {
			size /= 2
		}
	}
	return ops, failure
}

package backendtest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stagedoor/once/backends"
)

// The model-based test drives a store with random sequences of Claim,
// Complete, Renew, Release, Checkpoint, Resolve, Hold, LeaseHeld, Admin
// Delete and Get, List walks, Count, Sweep and the passage of time, over a
// few keys and owners, with leases, holds and retentions that are either
// tiny (1 ns to 1 ms) or huge (an hour to math.MaxInt64,
// HoldUntilResolved), and checks every result against a reference model of
// the contract. The model tracks each record's checkpoints: Claim's Steps
// when Claimed and Admin.Get's Record.Steps are checked, every other
// Record must leave Steps nil.
//
// Time passes for real on a server, so the model never guesses a close
// boundary: a huge duration never ends during a run, and a tiny one has
// surely ended after the next "advance" step (which waits on the store's
// clock). Between its write and that step a tiny deadline may or may not
// have passed; the model then keeps every state the contract allows and
// lets the store's answer decide, so an answer is accepted only if some
// consistent timing explains it. Ages are bounded the same way: a record
// written before k advances is at least k×tinyEndsWithin old.
//
// The operations of an optional interface (Admin, Lister, a Sweep
// method) are skipped on a store without it (see capabilities).

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
			var fresh NewStore
			if privateStores(e, newStore) {
				fresh = newStore
			}
			ops := generate(rand.New(rand.NewPCG(seed, 0x0ace)), n)
			failed := runModel(e, fresh, ops)
			if failed == nil {
				return
			}
			minimal, why := shrink(e, fresh, ops[:failed.index+1], failed)
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
	opCheckpoint
	opResolve
	opHold
	opLeaseHeld
	opDelete
	opGet // the first that is not a write
	opList
	opCount
	opSweep
	opAdvance
)

var opNames = [...]string{"Claim", "Complete", "Renew", "Release", "Checkpoint", "Resolve", "Hold", "LeaseHeld", "Delete", "Get", "List", "Count", "Sweep", "Advance"}

type op struct {
	kind      opKind
	key       string
	owner     string
	fp        string
	outcome   string
	steps     string        // Checkpoint
	lease     time.Duration // Claim, Renew, LeaseHeld; Hold: the hold period
	retention time.Duration
	code, msg string // Hold
	list      listOp // List
	only      bool   // Resolve: OnlyLeased
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
	case opCheckpoint:
		return fmt.Sprintf("Checkpoint(%s, owner=%s, steps=%s)", o.key, o.owner, stepsString(o.steps))
	case opResolve:
		return fmt.Sprintf("Resolve(%s, owner=%q, fp=%q, outcome=%q, retention=%v, onlyLeased=%v)", o.key, o.owner, o.fp, o.outcome, o.retention, o.only)
	case opHold:
		return fmt.Sprintf("Hold(%s, owner=%s, for=%v, code=%.12q, message=%.12q, retention=%v)", o.key, o.owner, o.lease, o.code, o.msg, o.retention)
	case opLeaseHeld:
		return fmt.Sprintf("LeaseHeld(%s, owner=%s, lease=%v)", o.key, o.owner, o.lease)
	case opDelete, opGet:
		return fmt.Sprintf("%s(%s)", opNames[o.kind], o.key)
	case opList:
		return o.list.String()
	case opCount, opSweep:
		return opNames[o.kind]
	default:
		return "Advance (the store's clock passes every tiny duration)"
	}
}

var (
	modelKeys     = []string{"m0", "m1", "m2"}
	claimOwners   = []string{"owner-a", "owner-b", "owner-c"}
	resolveOwners = []string{"resolver-a", "resolver-b", ""}
	leaseOwners   = []string{"resolver-a", "resolver-b"}
	modelFPs      = []string{"", "fp-x", "fp-y"}
	modelOutcomes = []string{"v1", "v2"}
	// modelSteps are checkpoint blobs: none (Checkpoint removes them),
	// short ones, and bytes that are neither text nor short.
	modelSteps     = []string{"", "s1", "s2", "\x00\xff\xfe\x00", string(stepsBlob(7, 4<<10))}
	heldCodes      = []string{"provider_timeout", strings.Repeat("c", backends.MaxHeldCodeLen)}
	heldMessages   = []string{"", "the provider did not answer", strings.Repeat("é", backends.MaxHeldMessageLen/2)}
	tinyDurations  = []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond}
	hugeDurations  = []time.Duration{time.Hour, century, 1 << 62, math64}
	tinyEndsWithin = 2 * time.Millisecond // an Advance waits this long on the store's clock
)

// stepsString describes a checkpoint blob briefly.
func stepsString(s string) string {
	if len(s) > 12 {
		return fmt.Sprintf("%.12q…(%d bytes)", s, len(s))
	}
	return fmt.Sprintf("%q", s)
}

// century is the longest hold that HeldInfo.Unbounded does not call
// unbounded.
const century = 100 * 365 * 24 * time.Hour

func isHuge(d time.Duration) bool { return d >= time.Hour }

func generate(r *rand.Rand, n int) []op {
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	dur := func() time.Duration {
		if r.IntN(100) < 35 {
			return tinyDurations[r.IntN(len(tinyDurations))]
		}
		return hugeDurations[r.IntN(len(hugeDurations))]
	}
	holdFor := func() time.Duration {
		if r.IntN(100) < 15 {
			return backends.HoldUntilResolved
		}
		return dur()
	}
	lastClaimer, lastLeaser := map[string]string{}, map[string]string{}
	owner := func(key string) string {
		if o, ok := lastClaimer[key]; ok && r.IntN(100) < 70 {
			return o
		}
		return pick(claimOwners)
	}
	resolver := func(key string) string {
		switch n := r.IntN(100); {
		case n < 60:
			if o, ok := lastLeaser[key]; ok {
				return o
			}
		case n < 70:
			// The claimer's token: a held record's own, which took no
			// lease, must not pass for a reconciler's.
			if o, ok := lastClaimer[key]; ok {
				return o
			}
		}
		return pick(resolveOwners)
	}
	var ops []op
	for len(ops) < n {
		key := pick(modelKeys)
		var o op
		switch w := r.IntN(110); {
		case w >= 100:
			o = op{kind: opCheckpoint, key: key, owner: owner(key), steps: pick(modelSteps)}
		case w < 8 && len(ops) > 0 && ops[len(ops)-1].kind < opGet:
			// A driver's re-send of the previous write, reply lost.
			o = ops[len(ops)-1]
		case w < 30:
			o = op{kind: opClaim, key: key, owner: pick(claimOwners), fp: pick(modelFPs), lease: dur(), retention: dur()}
			lastClaimer[key] = o.owner
		case w < 39:
			o = op{kind: opComplete, key: key, owner: owner(key), outcome: pick(modelOutcomes), retention: dur()}
		case w < 45:
			o = op{kind: opRenew, key: key, owner: owner(key), lease: dur()}
		case w < 50:
			o = op{kind: opRelease, key: key, owner: owner(key)}
		case w < 58:
			o = op{kind: opResolve, key: key, owner: resolver(key), fp: pick(modelFPs), outcome: pick(modelOutcomes), retention: dur(), only: len(ops)%2 == 0}
			if slices.Contains(claimOwners, o.owner) {
				// Never the outcome of the owner's own Complete: a store
				// may or may not take that for a re-sent Resolve.
				o.outcome = "v-claimer"
			}
		case w < 65:
			o = op{kind: opHold, key: key, owner: owner(key), lease: holdFor(), code: pick(heldCodes), msg: pick(heldMessages), retention: dur()}
		case w < 71:
			o = op{kind: opLeaseHeld, key: key, owner: pick(leaseOwners), lease: dur()}
			lastLeaser[key] = o.owner
		case w < 75:
			// A held record on a fresh key, often under a reconciler's
			// lease, for the operations after it to meet: completed
			// records with huge retentions would block the keys otherwise.
			claimer := pick(claimOwners)
			lastClaimer[key] = claimer
			ops = append(ops,
				op{kind: opDelete, key: key},
				op{kind: opClaim, key: key, owner: claimer, fp: pick(modelFPs), lease: dur(), retention: dur()})
			if r.IntN(2) == 0 {
				// Checkpoints that the hold, its lease and its end keep.
				ops = append(ops, op{kind: opCheckpoint, key: key, owner: claimer, steps: pick(modelSteps)})
			}
			ops = append(ops,
				op{kind: opHold, key: key, owner: claimer, lease: holdFor(), code: pick(heldCodes), msg: pick(heldMessages), retention: dur()})
			if r.IntN(3) > 0 {
				leaser := pick(leaseOwners)
				lastLeaser[key] = leaser
				ops = append(ops, op{kind: opLeaseHeld, key: key, owner: leaser, lease: dur()})
			}
			// Then someone else meets it.
			switch r.IntN(4) {
			case 0:
				o = op{kind: opResolve, key: key, owner: pick(resolveOwners), fp: pick(modelFPs), outcome: pick(modelOutcomes), retention: dur(), only: len(ops)%2 == 0}
			case 1:
				o = op{kind: opLeaseHeld, key: key, owner: pick(leaseOwners), lease: dur()}
			case 2:
				o = op{kind: opComplete, key: key, owner: claimer, outcome: pick(modelOutcomes), retention: dur()}
			default:
				o = op{kind: opClaim, key: key, owner: pick(claimOwners), fp: pick(modelFPs), lease: dur(), retention: dur()}
			}
		case w < 79:
			o = op{kind: opDelete, key: key}
		case w < 89:
			o = op{kind: opGet, key: key}
		case w < 90:
			// Rare: a Redis walk or Count SCANs the whole keyspace,
			// however small the scope.
			o = op{kind: opList, list: generateList(r)}
		case w < 91:
			o = op{kind: []opKind{opCount, opSweep}[r.IntN(2)]}
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
	// lease is a pending record's lease, a held record's reconciler lease
	// (gone while none was taken); leased reports that a held record's
	// owner took its lease with LeaseHeld (Hold takes none).
	lease  deadline
	leased bool
	// hold is a held record's hold; unbounded reports one made longer
	// than a century (HeldInfo.Unbounded).
	hold      deadline
	unbounded bool
	code, msg string
	// since is the epoch in which a pending record was claimed or taken
	// over, a held record held.
	since  int
	expiry deadline // pending: at least the lease end (decision A)
	// steps is the record's checkpoints, "" for none.
	steps string
}

// world is one timing consistent with the model: the record as it is now,
// whether a pending record's lease (a held record's reconciler lease) is
// live, and whether a held record's hold is.
type world struct {
	rec                 mrec
	leaseLive, holdLive bool
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
	for _, leaseLive := range r.lease.possible(epoch) {
		lr := r
		if !leaseLive {
			lr.lease = gone
		}
		if r.state == backends.StatePending {
			ws = append(ws, world{rec: lr, leaseLive: leaseLive})
			continue
		}
		for _, holdLive := range r.hold.possible(epoch) {
			hr := lr
			if !holdLive {
				hr.hold = gone
			}
			ws = append(ws, world{rec: hr, leaseLive: leaseLive, holdLive: holdLive})
		}
	}
	return ws
}

// possible returns whether d may be live (true), ended (false), or both.
func (d deadline) possible(epoch int) []bool {
	switch d.at(epoch) {
	case live:
		return []bool{true}
	case passed:
		return []bool{false}
	default:
		return []bool{true, false}
	}
}

// leaseClass buckets a reported lease or hold: 0 ended, 1 live and short
// (a tiny duration), 2 live and long (a huge one; the shortest is an
// hour).
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

// holdClass is leaseClass of a hold, 3 when it is unbounded.
func holdClass(h backends.HeldInfo) int {
	if h.Unbounded() {
		return 3
	}
	return leaseClass(h.Remaining)
}

// result is what an operation reported, normalised so that the model's
// expectation and the store's answer compare with == (see admits).
type result struct {
	ok, tookOver bool
	state        backends.State
	fp, outcome  string
	lease, hold  int
	code, msg    string
	// expires is Get's and List's expiry class (leaseClass of ExpiresIn).
	expires int
	// age is the Age the store reported; minAge the least the model
	// allows (zero on a store that does not record ages).
	age, minAge time.Duration
	// steps is Claim's Steps when Claimed, and Record.Steps otherwise
	// (only Get's may be non-empty).
	steps string
}

// admits reports whether got is an answer the model's want allows.
func (want result) admits(got result) bool {
	if got.age < want.minAge {
		return false
	}
	got.age, want.minAge = 0, 0
	return want == got
}

func (r result) String() string {
	if r.state == 0 {
		if r.steps != "" {
			return fmt.Sprintf("{ok=%v tookOver=%v steps=%s}", r.ok, r.tookOver, stepsString(r.steps))
		}
		return fmt.Sprintf("{ok=%v tookOver=%v}", r.ok, r.tookOver)
	}
	s := fmt.Sprintf("{ok=%v existing %v fp=%q outcome=%q leaseClass=%d", r.ok, r.state, r.fp, r.outcome, r.lease)
	if r.hold != 0 || r.code != "" || r.msg != "" {
		s += fmt.Sprintf(" holdClass=%d code=%.12q message=%.12q", r.hold, r.code, r.msg)
	}
	if r.expires != 0 {
		s += fmt.Sprintf(" expiresClass=%d", r.expires)
	}
	if r.minAge != 0 {
		s += fmt.Sprintf(" age>=%v", r.minAge)
	}
	if r.age != 0 {
		s += fmt.Sprintf(" age=%v", r.age)
	}
	if r.steps != "" {
		s += " steps=" + stepsString(r.steps)
	}
	return s + "}"
}

// minAge is the least age of a record written in epoch since.
func minAge(since, epoch int) time.Duration {
	return time.Duration(epoch-since) * tinyEndsWithin
}

func existingResult(w world, epoch int) result {
	r := result{state: w.rec.state, fp: w.rec.fp, outcome: w.rec.outcome}
	if w.rec.state == backends.StateCompleted {
		return r
	}
	r.minAge = minAge(w.rec.since, epoch)
	if w.leaseLive {
		r.lease = 1
		if w.rec.lease.huge {
			r.lease = 2
		}
	}
	if w.rec.state == backends.StateHeld {
		r.code, r.msg = w.rec.code, w.rec.msg
		switch {
		case !w.holdLive:
		case w.rec.unbounded:
			r.hold = 3
		case w.rec.hold.huge:
			r.hold = 2
		default:
			r.hold = 1
		}
	}
	return r
}

func expiresClass(d deadline) int {
	if d.huge {
		return 2
	}
	return 1
}

// reportedExpiresClass is expiresClass of a reported ExpiresIn: zero
// (under the store's resolution) and short are alike.
func reportedExpiresClass(d time.Duration) int {
	if d > 30*time.Minute {
		return 2
	}
	return 1
}

func boundFP(stored, given string) string {
	if given == "" {
		return stored
	}
	return given
}

func fpMatch(stored, given string) bool { return stored == "" || given == "" || stored == given }

// apply returns what the contract says o reports in world w, and the
// record after it. backends.Record says a store that implements Lister
// reports Age on every Record it returns: the answers of Claim, Resolve
// and LeaseHeld are checked as Get's and List's are.
func apply(w world, o op, epoch int) (result, mrec) {
	return applyContract(w, o, epoch)
}

func applyContract(w world, o op, epoch int) (result, mrec) {
	r := w.rec
	pending, completed, held := r.state == backends.StatePending, r.state == backends.StateCompleted, r.state == backends.StateHeld
	// otherReconciler: a held record's live reconciler lease is not o's.
	otherReconciler := held && w.leaseLive && r.owner != o.owner
	switch o.kind {
	case opClaim:
		newClaim := func(fp, steps string) mrec {
			lease := deadlineOf(o.lease, epoch)
			return mrec{state: backends.StatePending, owner: o.owner, fp: fp, lease: lease, since: epoch, expiry: later(lease, deadlineOf(o.retention, epoch)), steps: steps}
		}
		switch {
		case r.state == 0:
			return result{ok: true}, newClaim(o.fp, "") // an absent or expired key starts with none
		case pending && r.owner == o.owner:
			return result{ok: true, steps: r.steps}, r // a re-send: nothing changes
		case pending && !w.leaseLive && fpMatch(r.fp, o.fp),
			held && !w.leaseLive && !w.holdLive && fpMatch(r.fp, o.fp):
			// A takeover resumes from the record's checkpoints.
			return result{ok: true, tookOver: true, steps: r.steps}, newClaim(boundFP(r.fp, o.fp), r.steps)
		default:
			return existingResult(w, epoch), r
		}
	case opComplete:
		switch {
		case completed && r.owner == o.owner && r.outcome == o.outcome:
			return result{ok: true}, r
		case pending && r.owner == o.owner:
			return result{ok: true}, mrec{state: backends.StateCompleted, owner: r.owner, fp: r.fp, outcome: o.outcome, expiry: deadlineOf(o.retention, epoch), steps: r.steps}
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
		switch {
		case pending && r.owner == o.owner && r.steps == "":
			return result{ok: true}, mrec{}
		case pending && r.owner == o.owner:
			// Kept for its checkpoints, its lease ended: still its
			// owner's, claimable at once by a matching fingerprint.
			n := r
			n.lease = gone
			return result{ok: true}, n
		}
		return result{}, r
	case opCheckpoint:
		if pending && r.owner == o.owner {
			n := r
			n.steps = o.steps // empty removes them
			return result{ok: true}, n
		}
		return result{}, r
	case opResolve:
		resolved := func(fp string) mrec {
			return mrec{state: backends.StateCompleted, owner: o.owner, fp: fp, outcome: o.outcome, expiry: deadlineOf(o.retention, epoch), steps: r.steps}
		}
		switch {
		case o.only && r.state == 0:
			return result{}, r // the next intent's key
		case o.only && completed && o.owner != "" && r.owner == o.owner && r.outcome == o.outcome:
			return result{ok: true}, r // a re-send
		case o.only && !(held && r.leased && o.owner != "" && r.owner == o.owner && fpMatch(r.fp, o.fp)):
			return existingResult(w, epoch), r // not a held record this token leased
		case r.state == 0:
			return result{ok: true}, resolved(o.fp)
		case pending && w.leaseLive:
			return existingResult(w, epoch), r // its owner is running
		case (pending || held && !otherReconciler) && fpMatch(r.fp, o.fp):
			return result{ok: true}, resolved(boundFP(r.fp, o.fp))
		case completed && o.owner != "" && r.owner == o.owner && r.outcome == o.outcome:
			return result{ok: true}, r
		default:
			return existingResult(w, epoch), r
		}
	case opHold:
		switch {
		case pending && r.owner == o.owner:
			hold := deadlineOf(o.lease, epoch)
			return result{ok: true}, mrec{
				state: backends.StateHeld, owner: r.owner, fp: r.fp, lease: gone,
				hold: hold, unbounded: o.lease > century, code: o.code, msg: o.msg,
				since: epoch, expiry: later(hold, deadlineOf(o.retention, epoch)), steps: r.steps,
			}
		case held && r.owner == o.owner:
			return result{ok: true}, r // a re-send: left as it is
		}
		return result{}, r
	case opLeaseHeld:
		if held && !otherReconciler {
			n := r
			n.owner, n.leased = o.owner, true
			n.lease = deadlineOf(o.lease, epoch)
			n.expiry = later(r.expiry, n.lease)
			return result{ok: true}, n
		}
		if r.state == 0 {
			return result{}, r
		}
		return existingResult(w, epoch), r
	case opDelete:
		return result{ok: r.state != 0}, mrec{}
	case opGet:
		if r.state == 0 {
			return result{}, r
		}
		res := existingResult(w, epoch)
		res.ok = true
		res.expires = expiresClass(r.expiry)
		res.steps = r.steps // Get alone reports them
		return res, r
	}
	panic("unreachable")
}

// ---- running against the store ----

type modelFailure struct {
	index int
	msg   string
}

func bytesOf(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// fromRecord normalises a record the store reported.
func fromRecord(rec backends.Record) result {
	return result{
		state: rec.State, fp: string(rec.Fingerprint), outcome: string(rec.Outcome),
		lease: leaseClass(rec.LeaseRemaining), hold: holdClass(rec.Held), code: rec.Held.Code, msg: rec.Held.Message,
		age: rec.Age, steps: string(rec.Steps),
	}
}

// do runs o, a single-key operation, on the store and normalises its
// answer.
func do(e *env, c capabilities, o op) (result, error) {
	s, ctx := e.store, e.ctx
	switch o.kind {
	case opClaim:
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: e.scope, Key: o.key, Fingerprint: bytesOf(o.fp), Owner: o.owner, Lease: o.lease, Retention: o.retention})
		if err != nil {
			return result{}, err
		}
		if err := checkNilSteps("ClaimResult", r.Steps); err != nil {
			return result{}, err
		}
		if r.Claimed {
			return result{ok: true, tookOver: r.TookOver, steps: string(r.Steps)}, nil
		}
		if r.Steps != nil {
			return result{}, fmt.Errorf("a Claim that did not claim reported Steps %s", stepsString(string(r.Steps)))
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
	case opCheckpoint:
		ok, err := s.Checkpoint(ctx, backends.CheckpointParams{Scope: e.scope, Key: o.key, Owner: o.owner, Steps: bytesOf(o.steps)})
		return result{ok: ok}, err
	case opResolve:
		r, err := s.Resolve(ctx, backends.ResolveParams{Scope: e.scope, Key: o.key, Fingerprint: bytesOf(o.fp), Owner: o.owner, Outcome: []byte(o.outcome), Retention: o.retention, OnlyLeased: o.only})
		if err != nil || r.Resolved || o.only && r.Existing.State == 0 {
			return result{ok: r.Resolved}, err
		}
		return fromRecord(r.Existing), nil
	case opHold:
		ok, err := s.Hold(ctx, backends.HoldParams{Scope: e.scope, Key: o.key, Owner: o.owner, For: o.lease, Code: o.code, Message: o.msg, Retention: o.retention})
		return result{ok: ok}, err
	case opLeaseHeld:
		r, err := s.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: e.scope, Key: o.key, Owner: o.owner, Lease: o.lease})
		if err != nil || r.Leased || r.Existing.State == 0 {
			return result{ok: r.Leased}, err
		}
		return fromRecord(r.Existing), nil
	case opDelete:
		ok, err := c.admin.Delete(ctx, e.scope, o.key)
		return result{ok: ok}, err
	case opGet:
		rec, err := c.admin.Get(ctx, e.scope, o.key)
		if err != nil || rec.State == 0 {
			return result{}, err
		}
		if err := checkExpiresIn(rec); err != nil {
			return result{}, fmt.Errorf("the record Get reported: %w", err)
		}
		if err := checkNilSteps("Record", rec.Steps); err != nil {
			return result{}, err
		}
		r := fromRecord(rec)
		r.ok = true
		r.expires = reportedExpiresClass(rec.ExpiresIn)
		return r, nil
	}
	panic("unreachable")
}

// checkNilSteps checks that reported checkpoints are nil when there are
// none, as ClaimResult.Steps and Record.Steps say.
func checkNilSteps(where string, steps []byte) error {
	if steps != nil && len(steps) == 0 {
		return fmt.Errorf("%s.Steps is empty but not nil", where)
	}
	return nil
}

// checkExpiresIn checks what Get and List report of a live record's
// expiry against its lease and hold: the record lives at least until
// both end.
//
// slack covers reads of two clocks: a Redis script computes the lease end
// from TIME but its key's PX from the time its command started, so the
// record can expire milliseconds before its lease ends on a loaded
// server (seen: 5 ms). The model's durations are tiny (at most 1 ms) or
// at least an hour, so the slack hides no confusion of the two.
func checkExpiresIn(rec backends.Record) error {
	const slack = 50 * time.Millisecond
	expiresIn := rec.ExpiresIn
	if expiresIn < 0 { // zero: less than the store's resolution (Redis: 1 ms) left
		return fmt.Errorf("a live record expires in %v", expiresIn)
	}
	if rec.LeaseRemaining > slack && expiresIn < rec.LeaseRemaining-slack {
		return fmt.Errorf("a %v record expires (in %v) before its lease ends (in %v)", rec.State, expiresIn, rec.LeaseRemaining)
	}
	if rec.State == backends.StateHeld && !rec.Held.Unbounded() && rec.Held.Remaining > slack && expiresIn < rec.Held.Remaining-slack {
		return fmt.Errorf("a held record expires (in %v) before its hold ends (in %v)", expiresIn, rec.Held.Remaining)
	}
	return nil
}

// advance is elapse on a marker it releases afterwards, so that the
// thousands of Advances of a long run leave no records behind (a Redis
// List walk scans them all).
func (e *env) advance(d time.Duration) {
	e.t.Helper()
	marker, owner := "clock-"+Token(), ""
	e.mustClaim(marker, Token(), nil, d+clockSlack, longRetention)
	e.eventually(func() bool {
		owner = Token()
		return e.claim(marker, owner, nil, longLease, longRetention).TookOver
	}, "a marker lease of "+d.String()+" never ended")
	e.release(marker, owner)
}

// runModel runs ops on a fresh scope of e's store (on a store of its own
// from fresh, when not nil) and returns the first disagreement with the
// model, or nil.
func runModel(e *env, fresh NewStore, ops []op) *modelFailure {
	if fresh != nil {
		e.store = fresh(e.t)
	}
	e.scope = Scope(e.t)
	// The clock's markers live in a scope of their own, so that the
	// run's scope holds the model's keys alone.
	clock := &env{t: e.t, ctx: e.ctx, store: e.store, scope: Scope(e.t)}
	c := capabilitiesOf(e.store)
	m := &modelRun{states: map[string][]mrec{}, private: fresh != nil}
	for i, o := range ops {
		if !c.runs(o.kind) {
			continue
		}
		var msg string
		switch o.kind {
		case opAdvance:
			clock.advance(tinyEndsWithin)
			m.epoch++
		case opList:
			msg = m.list(e, c, o.list)
		case opCount:
			msg = m.count(e, c)
		case opSweep:
			msg = m.sweep(e, c)
		default:
			msg = m.single(e, c, o)
		}
		if msg != "" {
			return &modelFailure{i, fmt.Sprintf("operation %d, %s: %s", i, o, msg)}
		}
	}
	return nil
}

// modelRun is the model during one run: the records each key may hold
// now and the current epoch.
type modelRun struct {
	epoch  int
	states map[string][]mrec
	// private reports that the store holds this run's records alone.
	private bool
}

// candidates returns the records key may hold (absent before any write).
func (m *modelRun) candidates(key string) []mrec {
	if c := m.states[key]; len(c) > 0 {
		return c
	}
	return []mrec{{}}
}

// single runs a one-key operation and narrows the key's candidates to
// those consistent with its answer; it returns why none is, or "".
func (m *modelRun) single(e *env, c capabilities, o op) string {
	got, err := do(e, c, o)
	if err != nil {
		return err.Error()
	}
	var next []mrec
	var expected []string
	for _, cand := range m.candidates(o.key) {
		for _, w := range cand.worlds(m.epoch) {
			want, after := apply(w, o, m.epoch)
			if !c.ages {
				want.minAge = 0
			}
			expected = append(expected, want.String())
			if want.admits(got) && !contains(next, after) {
				next = append(next, after)
			}
		}
	}
	if len(next) == 0 {
		return fmt.Sprintf("the store reported %v; the contract allows %s", got, strings.Join(dedupe(expected), " or "))
	}
	m.states[o.key] = next
	return ""
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
func shrink(e *env, fresh NewStore, ops []op, failure *modelFailure) ([]op, *modelFailure) {
	const maxAttempts = 300
	attempts := 0
	for size := len(ops) / 2; size >= 1 && attempts < maxAttempts; {
		reduced := false
		for start := 0; start+size <= len(ops) && attempts < maxAttempts; {
			cand := append(append([]op(nil), ops[:start]...), ops[start+size:]...)
			attempts++
			if f := runModel(e, fresh, cand); f != nil {
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

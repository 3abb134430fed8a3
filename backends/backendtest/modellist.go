package backendtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// The model's operations over many keys: a List walk of the run's scope,
// Count and Sweep.

// listOp is a walk of the run's scope with one page size and filter.
type listOp struct {
	state backends.State
	// olderThan is the age filter in Advances (tinyEndsWithin each); -1
	// is an hour, which no record of a run reaches.
	olderThan int
	prefix    string
	limit     int
}

func (l listOp) String() string {
	return fmt.Sprintf("List(state=%v, olderThan=%v, prefix=%q, limit=%d)", l.state, l.age(), l.prefix, l.limit)
}

func (l listOp) age() time.Duration {
	if l.olderThan < 0 {
		return time.Hour
	}
	return time.Duration(l.olderThan) * tinyEndsWithin
}

func generateList(r *rand.Rand) listOp {
	return listOp{
		state:     []backends.State{0, 0, backends.StatePending, backends.StateHeld}[r.IntN(4)],
		olderThan: []int{0, 0, 1, 3, -1}[r.IntN(5)],
		prefix:    []string{"", "", "m", "m1"}[r.IntN(4)],
		limit:     []int{0, 1, 2, 5}[r.IntN(4)],
	}
}

// maxWalkPages bounds a walk of a scope of a few records (a page may be
// empty while Next is not, so this is generous).
const maxWalkPages = 10_000

// list walks the scope and narrows each key's candidates to those
// consistent with what the walk returned for it: a record that matches
// the filter and is surely older than its age is listed; every listed
// record is one the key may hold.
func (m *modelRun) list(e *env, c capabilities, l listOp) string {
	p := backends.ListParams{State: l.state, OlderThan: l.age(), Scope: e.scope, KeyPrefix: l.prefix, Limit: l.limit}
	limit := l.limit
	if limit <= 0 {
		limit = backends.DefaultListLimit
	}
	byKey := map[string][]backends.Listed{}
	for pages := 1; ; pages++ {
		if pages > maxWalkPages {
			return fmt.Sprintf("the walk did not end after %d pages", maxWalkPages)
		}
		page, err := c.lister.List(e.ctx, p)
		if err != nil {
			return err.Error()
		}
		if len(page.Records) > limit {
			return fmt.Sprintf("a page of limit %d holds %d records", limit, len(page.Records))
		}
		for _, r := range page.Records {
			if msg := l.filterMismatch(e.scope, r, p.OlderThan); msg != "" {
				return fmt.Sprintf("listed %s/%s %v: %s", r.Scope, r.Key, fromRecord(r.Record), msg)
			}
			if !slices.Contains(modelKeys, r.Key) {
				return fmt.Sprintf("listed %s/%s, a key the run never wrote", r.Scope, r.Key)
			}
			byKey[r.Key] = append(byKey[r.Key], r)
		}
		if page.Next == "" {
			break
		}
		p.Cursor = page.Next
	}
	for _, key := range modelKeys {
		obs := byKey[key]
		var next []mrec
		var allowed []string
		for _, cand := range m.candidates(key) {
			for _, w := range cand.worlds(m.epoch) {
				ok, want := m.listAdmits(w, key, l, c.ages, obs)
				allowed = append(allowed, want)
				if ok && !contains(next, w.rec) {
					next = append(next, w.rec)
				}
			}
		}
		if len(next) == 0 {
			var got []string
			for _, r := range obs {
				res := fromRecord(r.Record)
				res.expires = reportedExpiresClass(r.Record.ExpiresIn)
				got = append(got, res.String())
			}
			if len(got) == 0 {
				got = []string{"nothing"}
			}
			return fmt.Sprintf("the walk returned %s for %s; the contract allows %s",
				strings.Join(got, " and "), key, strings.Join(dedupe(allowed), " or "))
		}
		m.states[key] = next
	}
	return ""
}

// filterMismatch says how a listed record fails the walk's parameters,
// or "".
func (l listOp) filterMismatch(scope string, r backends.Listed, olderThan time.Duration) string {
	switch {
	case r.Scope != scope:
		return "not of the scope asked for"
	case !strings.HasPrefix(r.Key, l.prefix):
		return "its key lacks the prefix asked for"
	case r.Record.State != backends.StatePending && r.Record.State != backends.StateHeld:
		return "only pending and held records are listed"
	case l.state != 0 && r.Record.State != l.state:
		return "not of the state asked for"
	case r.Record.Age < olderThan:
		return fmt.Sprintf("its age %v is under the filter's", r.Record.Age)
	}
	if err := checkExpiresIn(r.Record); err != nil {
		return err.Error()
	}
	return ""
}

// listAdmits reports whether a walk that returned obs for key is
// consistent with world w, and describes what w allows.
func (m *modelRun) listAdmits(w world, key string, l listOp, ages bool, obs []backends.Listed) (bool, string) {
	r := w.rec
	eligible := (r.state == backends.StatePending || r.state == backends.StateHeld) &&
		(l.state == 0 || l.state == r.state) && strings.HasPrefix(key, l.prefix) && l.olderThan >= 0
	if !eligible {
		return len(obs) == 0, "nothing"
	}
	want := existingResult(w, m.epoch)
	want.expires = expiresClass(r.expiry)
	if !ages {
		want.minAge = 0
	}
	surelyOld := m.epoch-r.since >= l.olderThan
	desc := want.String()
	if !surelyOld {
		desc += " (or nothing)"
	}
	if len(obs) == 0 {
		return !surelyOld, desc
	}
	for _, o := range obs {
		got := fromRecord(o.Record)
		got.expires = reportedExpiresClass(o.Record.ExpiresIn)
		if !want.admits(got) {
			return false, desc
		}
	}
	return true, desc
}

// count checks Count against the run's scope. On a store shared with
// other tests, each state's count is at least the number of this scope's
// keys surely in that state, and the oldest ages at least the oldest such record's least
// age. On a store of the run's own, each count is also at most the keys
// that may be in that state.
func (m *modelRun) count(e *env, c capabilities) string {
	got, err := c.lister.Count(e.ctx)
	if err != nil {
		return err.Error()
	}
	if got.Pending < 0 || got.Held < 0 || got.Completed < 0 || got.Expired < 0 || got.SizeBytes < 0 ||
		got.OldestPending < 0 || got.OldestHeld < 0 {
		return fmt.Sprintf("negative counts: %+v", got)
	}
	if got.Stored < got.Pending+got.Held+got.Completed+got.Expired {
		return fmt.Sprintf("Stored is under the records counted by state: %+v", got)
	}
	var least, most backends.Counts
	for _, key := range modelKeys {
		possible, sure, since := m.statesOf(key)
		for st := range possible {
			*countOf(&most, st)++
		}
		if sure == 0 {
			continue
		}
		*countOf(&least, sure)++
		switch age := minAge(since, m.epoch); sure {
		case backends.StatePending:
			least.OldestPending = max(least.OldestPending, age)
		case backends.StateHeld:
			least.OldestHeld = max(least.OldestHeld, age)
		}
	}
	if !c.ages {
		least.OldestPending, least.OldestHeld = 0, 0
	}
	if got.Pending < least.Pending || got.Held < least.Held || got.Completed < least.Completed ||
		got.OldestPending < least.OldestPending || got.OldestHeld < least.OldestHeld {
		return fmt.Sprintf("the store counted %+v; this scope alone holds at least %+v", got, least)
	}
	if m.private && (got.Pending > most.Pending || got.Held > most.Held || got.Completed > most.Completed) {
		return fmt.Sprintf("the store, holding this run's records alone, counted %+v; they are at most %+v", got, most)
	}
	return ""
}

func countOf(c *backends.Counts, s backends.State) *int64 {
	switch s {
	case backends.StatePending:
		return &c.Pending
	case backends.StateHeld:
		return &c.Held
	default:
		return &c.Completed
	}
}

// statesOf returns the states key may be in (absent left out), the state
// it is surely in (zero when the worlds disagree or it may be absent),
// and the latest epoch it may have entered that state in.
func (m *modelRun) statesOf(key string) (possible map[backends.State]bool, sure backends.State, since int) {
	possible = map[backends.State]bool{}
	absent := false
	for _, cand := range m.candidates(key) {
		for _, w := range cand.worlds(m.epoch) {
			if w.rec.state == 0 {
				absent = true
				continue
			}
			possible[w.rec.state] = true
			since = max(since, w.rec.since)
		}
	}
	if absent || len(possible) != 1 {
		return possible, 0, 0
	}
	for st := range possible {
		sure = st
	}
	return possible, sure, since
}

// privateStores reports whether newStore gives each call a store of its
// own (memory.New per call) rather than one shared store: a record
// written through e's store is not found through another one. The model
// then runs each sequence on a fresh store and checks Count exactly.
func privateStores(e *env, newStore NewStore) bool {
	e.t.Helper()
	c := capabilitiesOf(e.store)
	other, ok := backends.As[backends.Admin](newStore(e.t))
	if c.admin == nil || c.lister == nil || !ok {
		return false
	}
	key := "private-" + Token()
	e.mustClaim(key, Token(), nil, longLease, longRetention)
	rec, err := other.Get(e.ctx, e.scope, key)
	require.NoError(e.t, err)
	_, err = c.admin.Delete(e.ctx, e.scope, key)
	require.NoError(e.t, err)
	return rec.State == 0
}

// sweep runs the store's sweep. Expired records are absent in every
// respect already, so the model is unchanged: a sweep that removes a live
// record shows in the operations after it.
func (m *modelRun) sweep(e *env, c capabilities) string {
	n, err := c.sweep(e.ctx)
	if err != nil {
		return err.Error()
	}
	if n < 0 {
		return fmt.Sprintf("swept %d records", n)
	}
	return ""
}

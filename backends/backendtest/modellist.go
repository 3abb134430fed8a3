package backendtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

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
				res.expires = reportedExpiresClass(r.ExpiresIn)
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
	if err := checkExpiresIn(r.Record, r.ExpiresIn); err != nil {
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
		got.expires = reportedExpiresClass(o.ExpiresIn)
		if !want.admits(got) {
			return false, desc
		}
	}
	return true, desc
}

// count checks Count against the run's scope. The store may be shared
// with other tests, so each state's count is at least the number of this
// scope's keys surely in that state (and the Advances' clock markers, all
// pending), and the oldest ages at least the oldest such record's least
// age.
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
	var want backends.Counts
	if m.advances > 0 {
		want.Pending = int64(m.advances)
		want.OldestPending = minAge(1, m.epoch)
	}
	for _, key := range modelKeys {
		state, since, sure := m.surely(key)
		if !sure {
			continue
		}
		switch state {
		case backends.StatePending:
			want.Pending++
			want.OldestPending = max(want.OldestPending, minAge(since, m.epoch))
		case backends.StateHeld:
			want.Held++
			want.OldestHeld = max(want.OldestHeld, minAge(since, m.epoch))
		case backends.StateCompleted:
			want.Completed++
		}
	}
	if !c.ages {
		want.OldestPending, want.OldestHeld = 0, 0
	}
	if got.Pending < want.Pending || got.Held < want.Held || got.Completed < want.Completed ||
		got.OldestPending < want.OldestPending || got.OldestHeld < want.OldestHeld {
		return fmt.Sprintf("the store counted %+v; this scope alone holds at least %+v", got, want)
	}
	return ""
}

// surely returns the state key is in in every world the model allows, and
// the latest epoch it may have entered it in; sure is false when the
// worlds disagree (or the key may be absent).
func (m *modelRun) surely(key string) (state backends.State, since int, sure bool) {
	for _, cand := range m.candidates(key) {
		for _, w := range cand.worlds(m.epoch) {
			if w.rec.state == 0 || state != 0 && w.rec.state != state {
				return 0, 0, false
			}
			state, since = w.rec.state, max(since, w.rec.since)
		}
	}
	return state, since, state != 0
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

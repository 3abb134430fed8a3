package backendtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// The behaviours of backends.Lister. Each skips, naming the interface,
// when the store does not implement it. Records under test have keys
// starting "k-" (advance's clock markers share the scope).

func (e *env) lister() backends.Lister {
	e.t.Helper()
	l, ok := backends.As[backends.Lister](e.store)
	if !ok {
		e.t.Skip("store does not implement backends.Lister")
	}
	return l
}

// walk lists every page for p and returns the records by key, failing on
// a page larger than its limit or on a record that does not match.
func (e *env) walk(p backends.ListParams) (map[string]backends.Listed, int) {
	e.t.Helper()
	l := e.lister()
	seen := map[string]backends.Listed{}
	pages := 0
	for {
		page, err := l.List(e.ctx, p)
		require.NoError(e.t, err)
		pages++
		require.LessOrEqual(e.t, pages, 100_000, "a walk ends")
		if p.Limit > 0 {
			require.LessOrEqual(e.t, len(page.Records), p.Limit, "a page holds at most Limit records")
		}
		for _, r := range page.Records {
			if p.State == 0 {
				require.NotEqual(e.t, backends.StateCompleted, r.Record.State, "State zero lists pending and held records")
			} else {
				require.Equal(e.t, p.State, r.Record.State)
			}
			if p.Scope != "" {
				require.Equal(e.t, p.Scope, r.Scope)
			}
			require.GreaterOrEqual(e.t, r.Record.Age, p.OlderThan, "the age filter")
			require.Positive(e.t, r.Record.ExpiresIn)
			seen[r.Scope+"\x00"+r.Key] = r
		}
		if page.Next == "" {
			return seen, pages
		}
		p.Cursor = page.Next
	}
}

// keysOf returns the keys of e.scope in seen whose key starts with prefix.
func (e *env) keysOf(seen map[string]backends.Listed, prefix string) []string {
	var keys []string
	for _, r := range seen {
		if r.Scope == e.scope && len(r.Key) >= len(prefix) && r.Key[:len(prefix)] == prefix {
			keys = append(keys, r.Key)
		}
	}
	return keys
}

// populate creates n pending, n held and n completed records in e.scope,
// and returns the keys of the pending and held ones.
func (e *env) populate(prefix string, n int) (pending, held []string) {
	e.t.Helper()
	for i := range n {
		owner := Token()
		k := fmt.Sprintf("%sp%03d", prefix, i)
		e.mustClaim(k, owner, []byte("fp"), longLease, longRetention)
		pending = append(pending, k)
		k = fmt.Sprintf("%sh%03d", prefix, i)
		e.mustClaim(k, owner, nil, longLease, longRetention)
		require.True(e.t, e.hold(k, owner, longLease, longRetention))
		held = append(held, k)
		k = fmt.Sprintf("%sc%03d", prefix, i)
		e.mustClaim(k, owner, nil, longLease, longRetention)
		require.True(e.t, e.complete(k, owner, []byte("v"), longRetention))
	}
	return pending, held
}

func exerciseList(t *testing.T, newStore NewStore) {
	run(t, newStore, "PaginatesEveryRecordOnce", func(e *env) {
		e.lister()
		pending, held := e.populate("k-", 23)
		seen, pages := e.walk(backends.ListParams{Scope: e.scope, KeyPrefix: "k-", Limit: 7})
		require.ElementsMatch(e.t, append(pending, held...), e.keysOf(seen, "k-"), "every pending and held record, none completed")
		require.GreaterOrEqual(e.t, pages, (len(pending)+len(held))/7, "pages of at most 7")
		for _, k := range held {
			r := seen[e.scope+"\x00"+k].Record
			require.Equal(e.t, backends.StateHeld, r.State)
			require.Equal(e.t, "provider_timeout", r.Held.Code)
		}
		for _, k := range pending {
			r := seen[e.scope+"\x00"+k].Record
			require.Equal(e.t, backends.StatePending, r.State)
			require.Equal(e.t, []byte("fp"), r.Fingerprint)
			require.Positive(e.t, r.LeaseRemaining)
		}
	})

	run(t, newStore, "StateFilter", func(e *env) {
		e.lister()
		pending, held := e.populate("k-", 5)
		seen, _ := e.walk(backends.ListParams{Scope: e.scope, KeyPrefix: "k-", State: backends.StatePending})
		require.ElementsMatch(e.t, pending, e.keysOf(seen, "k-"))
		seen, _ = e.walk(backends.ListParams{Scope: e.scope, KeyPrefix: "k-", State: backends.StateHeld})
		require.ElementsMatch(e.t, held, e.keysOf(seen, "k-"))
	})

	run(t, newStore, "CompletedRecords", func(e *env) {
		e.lister()
		const n = 5
		e.populate("k-", n)
		var completed []string
		for i := range n {
			completed = append(completed, fmt.Sprintf("k-c%03d", i))
		}
		seen, _ := e.walk(backends.ListParams{Scope: e.scope, KeyPrefix: "k-", State: backends.StateCompleted, Limit: 2})
		require.ElementsMatch(e.t, completed, e.keysOf(seen, "k-"), "every completed record, none pending or held")
		for _, k := range completed {
			r := seen[e.scope+"\x00"+k].Record
			require.Nil(e.t, r.Outcome, "listed without its outcome")
			require.Zero(e.t, r.Age)
			require.Zero(e.t, r.Held)
		}
		seen, _ = e.walk(backends.ListParams{Scope: e.scope, KeyPrefix: "k-", State: backends.StateCompleted, OlderThan: time.Nanosecond})
		require.Empty(e.t, e.keysOf(seen, "k-"), "a completed record's Age is zero")
	})

	run(t, newStore, "AgeFilter", func(e *env) {
		e.lister()
		// The old records are at least gap old by the store's clock once
		// e.elapse(gap) returns. The young ones are younger than gap as
		// long as populating and walking them took less than gap; on a
		// store slowed by load that may not hold, and then the round
		// proves nothing: it is made again, in a fresh prefix, with a
		// wider gap.
		for round, gap := 0, 2*shortLease; ; round, gap = round+1, 4*gap {
			prefix := fmt.Sprintf("k%d-", round)
			old, oldHeld := e.populate(prefix+"old-", 3)
			e.elapse(gap)
			start := time.Now()
			young, youngHeld := e.populate(prefix+"young-", 3)
			seen, _ := e.walk(backends.ListParams{Scope: e.scope, KeyPrefix: prefix, OlderThan: gap})
			if time.Since(start) >= gap && round < 3 {
				continue
			}
			require.ElementsMatch(e.t, append(old, oldHeld...), e.keysOf(seen, prefix), "only the records older than the age")
			seen, _ = e.walk(backends.ListParams{Scope: e.scope, KeyPrefix: prefix})
			require.ElementsMatch(e.t, append(append(old, oldHeld...), append(young, youngHeld...)...), e.keysOf(seen, prefix))
			return
		}
	})

	run(t, newStore, "HeldAgeCountsFromTheHold", func(e *env) {
		e.lister()
		// As in AgeFilter: a round whose hold and walk took longer than
		// the age filter proves nothing and is made again, wider.
		for round, age := 0, shortLease; ; round, age = round+1, 4*age {
			prefix := fmt.Sprintf("k%d-", round)
			e.mustHold(prefix+"a", Token(), nil, longLease)
			owner := Token()
			e.mustClaim(prefix+"b", owner, nil, longLease, longRetention)
			e.elapse(2 * age)
			start := time.Now()
			require.True(e.t, e.hold(prefix+"b", owner, longLease, longRetention))
			seen, _ := e.walk(backends.ListParams{Scope: e.scope, KeyPrefix: prefix, OlderThan: age})
			if time.Since(start) >= age && round < 3 {
				continue
			}
			require.ElementsMatch(e.t, []string{prefix + "a"}, e.keysOf(seen, prefix), "b was held just now")
			return
		}
	})

	run(t, newStore, "AcrossScopes", func(e *env) {
		e.lister()
		prefix := "k-" + Token() + "-"
		other := &env{t: e.t, ctx: e.ctx, store: e.store, scope: Scope(e.t)}
		mine, _ := e.populate(prefix, 2)
		theirs, _ := other.populate(prefix, 2)
		seen, _ := e.walk(backends.ListParams{KeyPrefix: prefix, State: backends.StatePending, Limit: 50})
		var got []string
		for _, r := range seen {
			got = append(got, r.Scope+"/"+r.Key)
		}
		var want []string
		for _, k := range mine {
			want = append(want, e.scope+"/"+k)
		}
		for _, k := range theirs {
			want = append(want, other.scope+"/"+k)
		}
		require.ElementsMatch(e.t, want, got, "one walk across scopes")
	})

	run(t, newStore, "EmptyAndBadCursor", func(e *env) {
		l := e.lister()
		seen, _ := e.walk(backends.ListParams{Scope: e.scope})
		require.Empty(e.t, seen)
		for _, c := range []string{
			"not a cursor \x00", ".", "..", "...", "....", " ", "\"", "0", "-1", "1.", "3.", "h.", "p.",
			strings.Repeat("9", 400), "1.-9223372036854775808..", "3.99999999999999999999999.00.00",
			strings.Repeat(".", 10_000), strings.Repeat("ff", 100_000),
		} {
			_, err := l.List(e.ctx, backends.ListParams{Cursor: c})
			requireListParamsError(e.t, err, "Cursor", fmt.Sprintf("a cursor the store did not return is an error, not a restart: %.40q", c))
		}
	})

	run(t, newStore, "RejectsAStateOutOfRange", func(e *env) {
		l := e.lister()
		for _, st := range []backends.State{4, 9, 10, 11, 13, 255} {
			_, err := l.List(e.ctx, backends.ListParams{State: st})
			requireListParamsError(e.t, err, "State", fmt.Sprintf("State %d", st))
			_, err = l.List(e.ctx, backends.ListParams{State: st, Scope: e.scope, Cursor: "garbage"})
			requireListParamsError(e.t, err, "State", fmt.Sprintf("the State is checked first: %d", st))
		}
	})

	run(t, newStore, "CursorIsBoundToItsFilters", func(e *env) {
		l := e.lister()
		e.populate("k-", 3)
		other := Scope(e.t)
		for _, base := range []backends.ListParams{
			{Scope: e.scope, KeyPrefix: "k-"},
			{Scope: e.scope, KeyPrefix: "k-", State: backends.StatePending},
			{Scope: e.scope, KeyPrefix: "k-", State: backends.StateHeld},
		} {
			// Every cursor of a walk (one record a page) is refused with
			// other filters, and accepted with the same ones, whatever
			// OlderThan and Limit.
			p := base
			p.Limit = 1
			cursors := 0
			for {
				page, err := l.List(e.ctx, p)
				require.NoError(e.t, err)
				if page.Next == "" {
					break
				}
				cursors++
				require.LessOrEqual(e.t, cursors, 10_000, "a walk ends")
				for _, st := range []backends.State{0, backends.StatePending, backends.StateHeld} {
					if st == base.State {
						continue
					}
					q := base
					q.State, q.Cursor = st, page.Next
					_, err := l.List(e.ctx, q)
					requireListParamsError(e.t, err, "Cursor", fmt.Sprintf("a cursor of State %v reused with State %v", base.State, st))
				}
				for _, q := range []backends.ListParams{
					{Scope: other, KeyPrefix: base.KeyPrefix},
					{Scope: "", KeyPrefix: base.KeyPrefix},
					{Scope: e.scope, KeyPrefix: "k-p"},
					{Scope: e.scope, KeyPrefix: ""},
				} {
					q.State, q.Cursor = base.State, page.Next
					_, err := l.List(e.ctx, q)
					requireListParamsError(e.t, err, "Cursor", fmt.Sprintf("a cursor reused with scope %q, prefix %q", q.Scope, q.KeyPrefix))
				}
				for _, c := range []string{page.Next + ".", " " + page.Next, "x" + page.Next} {
					q := base
					q.Cursor = c
					_, err := l.List(e.ctx, q)
					requireListParamsError(e.t, err, "Cursor", fmt.Sprintf("an altered cursor %q", c))
				}
				q := base
				q.Cursor, q.OlderThan, q.Limit = page.Next, time.Nanosecond, 5
				_, err = l.List(e.ctx, q)
				require.NoError(e.t, err, "OlderThan and Limit may change during a walk")
				p.Cursor = page.Next
			}
			require.Positive(e.t, cursors, "the walk had more than one page")
		}
	})

	run(t, newStore, "AWalkMayChangeItsLimit", func(e *env) {
		l := e.lister()
		pending, held := e.populate("k-", 12)
		seen := map[string]bool{}
		p := backends.ListParams{Scope: e.scope, KeyPrefix: "k-"}
		for i := 0; ; i++ {
			require.Less(e.t, i, 10_000, "a walk ends")
			p.Limit = []int{1, 5, 2, 200, 3}[i%5]
			page, err := l.List(e.ctx, p)
			require.NoError(e.t, err)
			for _, r := range page.Records {
				seen[r.Key] = true
			}
			if page.Next == "" {
				break
			}
			p.Cursor = page.Next
		}
		for _, k := range append(pending, held...) {
			require.True(e.t, seen[k], "every record is listed at least once: %s", k)
		}
	})

	run(t, newStore, "Count", func(e *env) {
		l := e.lister()
		e.populate("k-", 4)
		e.elapse(shortLease)
		c, err := l.Count(e.ctx)
		require.NoError(e.t, err)
		require.GreaterOrEqual(e.t, c.Pending, int64(4))
		require.GreaterOrEqual(e.t, c.Completed, int64(4))
		require.GreaterOrEqual(e.t, c.OldestPending, shortLease)
		require.GreaterOrEqual(e.t, c.Held, int64(4))
		require.GreaterOrEqual(e.t, c.OldestHeld, shortLease)
		require.GreaterOrEqual(e.t, c.Stored, c.Pending+c.Held+c.Completed)
	})

	exerciseListInputs(t, newStore)
}

// requireListParamsError fails unless err is a *backends.ListParamsError
// about field (and errors.Is backends.ErrInvalidListParams).
func requireListParamsError(t *testing.T, err error, field, what string) {
	t.Helper()
	var le *backends.ListParamsError
	require.ErrorAs(t, err, &le, what)
	require.Equal(t, field, le.Field, what)
	require.ErrorIs(t, err, backends.ErrInvalidListParams, what)
}

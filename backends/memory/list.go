package memory

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stagedoor/once/backends"
)

var _ backends.Lister = (*Store)(nil)

// cursor is a position in the walk: the records of shards before shard
// are done, and so are those of shard up to the place seq (see listing;
// zero: none of them).
type cursor struct {
	shard int
	seq   uint64
}

// encode returns the List cursor of c for the walk of codec.
func (c cursor) encode(codec backends.CursorCodec) string {
	return codec.Encode(strconv.Itoa(c.shard), strconv.FormatUint(c.seq, 10))
}

// parseCursor parses a cursor of encode for codec's parameters ("" is
// the start of a walk). It refuses, with a *backends.ListParamsError,
// anything encode does not return and a cursor returned for other
// parameters.
func parseCursor(s string, codec backends.CursorCodec) (cursor, error) {
	f, err := codec.Decode(s, 2)
	if err != nil || f == nil {
		return cursor{}, err
	}
	n, err := backends.CursorUint(f[0], shardCount-1)
	if err != nil {
		return cursor{}, err
	}
	seq, err := backends.CursorUint(f[1], math.MaxUint64)
	if err != nil {
		return cursor{}, err
	}
	return cursor{shard: int(n), seq: seq}, nil
}

// pageBudget is how many listing places one page of at most limit records
// may examine: the records it returns, those the filters leave out and
// stale places (see listing).
func pageBudget(limit int) int { return 4*limit + 1024 }

// List implements backends.Lister. It walks the shards in order and the
// records of a shard's listing (its pending and held records, or its
// completed ones) in the order they became so (see listing), so a walk
// returns once each record that stays in its listing's states throughout.
// The first List of completed records makes each shard it reaches keep a
// listing of them, at the cost of one pass over the shard, and of a place
// per completion from then on. A page resumes at its cursor's place with a binary search
// and examines at most pageBudget places, so its cost follows the page,
// whatever the store's size; a page may hold fewer than Limit records
// (none, even) while Next is not empty.
func (s *Store) List(ctx context.Context, p backends.ListParams) (backends.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return backends.ListPage{}, err
	}
	if err := p.Validate(); err != nil {
		return backends.ListPage{}, err
	}
	codec := p.Cursors()
	c, err := parseCursor(p.Cursor, codec)
	if err != nil {
		return backends.ListPage{}, err
	}
	w := walk{p: p, limit: p.PageLimit()}
	w.budget = pageBudget(w.limit)
	w.page.Records = make([]backends.Listed, 0, min(w.limit, backends.DefaultListLimit))
	for i := c.shard; i < shardCount; i++ {
		if seq, done := s.listShard(i, c.seq, &w); !done {
			w.page.Next = cursor{shard: i, seq: seq}.encode(codec)
			return w.page, nil
		}
		c.seq = 0
	}
	return w.page, nil
}

// walk is one page of List in the making.
type walk struct {
	p      backends.ListParams
	limit  int
	budget int // places the page may still examine
	page   backends.ListPage
}

// listShard adds to w's page the matching records of shard i after the
// place seq. done reports that it reached the shard's end; otherwise the
// page is full or its budget spent, and next is the last place examined.
func (s *Store) listShard(i int, seq uint64, w *walk) (next uint64, done bool) {
	sh := &s.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	next = seq
	if w.p.State == backends.StateCompleted {
		sh.keepCompleted()
	}
	l := sh.listingOf(w.p.State)
	for _, pl := range l.places[l.after(seq):] {
		if len(w.page.Records) == w.limit || w.budget == 0 {
			return next, false
		}
		w.budget--
		next = pl.seq
		e, ok := sh.records[pl.k]
		if !ok || e.seq != pl.seq || !w.matches(pl.k, e, now) {
			continue
		}
		e.outcome = nil // listed without it
		w.page.Records = append(w.page.Records, backends.Listed{Scope: pl.k.scope, Key: pl.k.key, Record: view(e, now)})
	}
	return next, true
}

// matches reports whether the live record e of k is one the walk lists:
// of its state (zero: pending or held) and at least OlderThan old (a
// completed record's Age is zero).
func (w *walk) matches(k recordKey, e entry, now time.Time) bool {
	switch {
	case !now.Before(e.expiresAt):
		return false
	case w.p.State == 0 && e.state == backends.StateCompleted, w.p.State != 0 && e.state != w.p.State:
		return false
	case e.state == backends.StateCompleted && w.p.OlderThan > 0:
		return false
	case e.state != backends.StateCompleted && now.Sub(e.since) < w.p.OlderThan:
		return false
	}
	return (w.p.Scope == "" || k.scope == w.p.Scope) && strings.HasPrefix(k.key, w.p.KeyPrefix)
}

// Count implements backends.Lister, examining every record.
func (s *Store) Count(ctx context.Context) (backends.Counts, error) {
	if err := ctx.Err(); err != nil {
		return backends.Counts{}, err
	}
	var c backends.Counts
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		now := s.now()
		for k, e := range sh.records {
			c.Stored++
			c.SizeBytes += int64(len(k.scope) + len(k.key) + len(e.fingerprint) + len(e.owner) + len(e.outcome) + len(e.code) + len(e.message))
			if !now.Before(e.expiresAt) {
				c.Expired++
				continue
			}
			switch e.state {
			case backends.StatePending:
				c.Pending++
				c.OldestPending = max(c.OldestPending, now.Sub(e.since))
			case backends.StateHeld:
				c.Held++
				c.OldestHeld = max(c.OldestHeld, now.Sub(e.since))
			case backends.StateCompleted:
				c.Completed++
			}
		}
		sh.mu.Unlock()
	}
	return c, nil
}

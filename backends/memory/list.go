package memory

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/stagedoor/once/backends"
)

var _ backends.Lister = (*Store)(nil)

// cursor is a position in the walk: the records of shards before shard
// are done, and so are those of shard up to (scope, key) in sort order
// when scope is not empty (no record's scope is).
type cursor struct {
	shard      int
	scope, key string
}

// encode returns the List cursor of c for the walk of codec.
func (c cursor) encode(codec backends.CursorCodec) string {
	return codec.Encode(strconv.Itoa(c.shard), c.scope, c.key)
}

// parseCursor parses a cursor of encode for codec's parameters ("" is
// the start of a walk). It refuses, with a *backends.ListParamsError,
// anything encode does not return and a cursor returned for other
// parameters.
func parseCursor(s string, codec backends.CursorCodec) (cursor, error) {
	f, err := codec.Decode(s, 3)
	if err != nil || f == nil {
		return cursor{}, err
	}
	n, err := backends.CursorUint(f[0], shardCount-1)
	if err != nil {
		return cursor{}, err
	}
	if err := backends.CheckCursorRecord(f[1], f[2]); err != nil {
		return cursor{}, err
	}
	return cursor{shard: int(n), scope: f[1], key: f[2]}, nil
}

func compareKeys(a, b recordKey) int {
	return cmp.Or(strings.Compare(a.scope, b.scope), strings.Compare(a.key, b.key))
}

// List implements backends.Lister. It walks the shards in order and the
// records of a shard in (scope, key) order, so a walk returns each
// matching record once. A page examines the records of the shards it
// touches: O(n log n) in their size.
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
	limit := p.PageLimit()
	var page backends.ListPage
	for i := c.shard; i < shardCount; i++ {
		matches := s.shardMatches(i, p, c)
		if room := limit - len(page.Records); len(matches) > room {
			page.Records = append(page.Records, matches[:room]...)
			last := page.Records[len(page.Records)-1]
			page.Next = cursor{shard: i, scope: last.Scope, key: last.Key}.encode(codec)
			return page, nil
		}
		page.Records = append(page.Records, matches...)
		c = cursor{}
		if len(page.Records) == limit && i+1 < shardCount {
			page.Next = cursor{shard: i + 1}.encode(codec)
			return page, nil
		}
	}
	return page, nil
}

// shardMatches returns the matching records of shard i after c, sorted.
func (s *Store) shardMatches(i int, p backends.ListParams, c cursor) []backends.Listed {
	sh := &s.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	var keys []recordKey
	for k, e := range sh.records {
		if !now.Before(e.expiresAt) || !listable(e, p.State) || now.Sub(e.since) < p.OlderThan {
			continue
		}
		if p.Scope != "" && k.scope != p.Scope || !strings.HasPrefix(k.key, p.KeyPrefix) {
			continue
		}
		if c.scope != "" && c.shard == i && compareKeys(k, recordKey{c.scope, c.key}) <= 0 {
			continue
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	out := make([]backends.Listed, len(keys))
	for j, k := range keys {
		e := sh.records[k]
		out[j] = backends.Listed{Scope: k.scope, Key: k.key, Record: view(e, now), ExpiresIn: e.expiresAt.Sub(now)}
	}
	return out
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

// listable reports whether e is a pending or held record of the state
// asked for (zero: both).
func listable(e entry, state backends.State) bool {
	if e.state != backends.StatePending && e.state != backends.StateHeld {
		return false
	}
	return state == 0 || e.state == state
}

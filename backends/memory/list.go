package memory

import (
	"cmp"
	"context"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/stagedoor/once/backends"
)

var _ backends.Lister = (*Store)(nil)

// cursor is a position in the walk: the records of shards before shard
// are done, and so are those of shard up to (scope, key) in sort order.
// binding is the ListParams.CursorBinding of the walk.
type cursor struct {
	binding    string
	shard      int
	scope, key string
	started    bool // scope and key are set
}

func (c cursor) String() string {
	s := c.binding + "." + strconv.Itoa(c.shard)
	if !c.started {
		return s
	}
	return s + "." + hex.EncodeToString([]byte(c.scope)) + "." + hex.EncodeToString([]byte(c.key))
}

// parseCursor parses a cursor of String for p ("" is the start of a
// walk). It refuses, with a *backends.ListParamsError, anything String
// does not return (a non-canonical spelling included) and a cursor
// returned for other parameters.
func parseCursor(s string, p backends.ListParams) (cursor, error) {
	if s == "" {
		return cursor{}, nil
	}
	if len(s) > maxCursorLen {
		return cursor{}, backends.BadCursor()
	}
	parts := strings.Split(s, ".")
	if len(parts) != 2 && len(parts) != 4 {
		return cursor{}, backends.BadCursor()
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 0 || n >= shardCount {
		return cursor{}, backends.BadCursor()
	}
	c := cursor{binding: parts[0], shard: n}
	if len(parts) == 4 {
		scope, err1 := hex.DecodeString(parts[2])
		key, err2 := hex.DecodeString(parts[3])
		if err1 != nil || err2 != nil || len(scope) > backends.MaxScopeLen || len(key) > backends.MaxKeyLen {
			return cursor{}, backends.BadCursor()
		}
		c.scope, c.key, c.started = string(scope), string(key), true
	}
	if c.String() != s {
		return cursor{}, backends.BadCursor()
	}
	if err := p.CheckCursorBinding(c.binding); err != nil {
		return cursor{}, err
	}
	return c, nil
}

// maxCursorLen bounds the cursors String returns.
const maxCursorLen = 17 + 1 + 3 + 1 + 2*backends.MaxScopeLen + 1 + 2*backends.MaxKeyLen

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
	c, err := parseCursor(p.Cursor, p)
	if err != nil {
		return backends.ListPage{}, err
	}
	binding := p.CursorBinding()
	limit := p.Limit
	if limit <= 0 {
		limit = backends.DefaultListLimit
	}
	limit = min(limit, backends.MaxListLimit)
	var page backends.ListPage
	for i := c.shard; i < shardCount; i++ {
		matches := s.shardMatches(i, p, c)
		if room := limit - len(page.Records); len(matches) > room {
			page.Records = append(page.Records, matches[:room]...)
			last := page.Records[len(page.Records)-1]
			page.Next = cursor{binding: binding, shard: i, scope: last.Scope, key: last.Key, started: true}.String()
			return page, nil
		}
		page.Records = append(page.Records, matches...)
		c = cursor{binding: binding}
		if len(page.Records) == limit && i+1 < shardCount {
			page.Next = cursor{binding: binding, shard: i + 1}.String()
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
		if c.started && c.shard == i && compareKeys(k, recordKey{c.scope, c.key}) <= 0 {
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

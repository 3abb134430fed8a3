package redisstore

import (
	"cmp"
	"context"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/redislua"
)

var _ backends.Lister = (*Store)(nil)

// scanRoundsPerPage bounds the SCAN calls of one List page, so that a page
// over a keyspace of mostly other or completed keys returns (possibly
// empty, with a Next cursor) instead of walking it all.
const scanRoundsPerPage = 16

// node is one primary the walk visits, named by its address.
type node struct {
	addr   string
	client redis.Cmdable
}

// nodes returns the primaries in address order: every primary of a
// Cluster, or the one server of any other client.
func (s *Store) nodes(ctx context.Context) ([]node, error) {
	cc, ok := s.client.(*redis.ClusterClient)
	if !ok {
		return []node{{addr: "", client: s.client}}, nil
	}
	// ForEachMaster runs the callbacks concurrently and returns once all
	// have: they collect under a mutex (a channel would have to be read
	// meanwhile).
	var (
		mu   sync.Mutex
		list []node
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		list = append(list, node{addr: c.Options().Addr, client: c})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b node) int { return strings.Compare(a.addr, b.addr) })
	return list, nil
}

// listCursor is a position in the walk: the primaries before addr are
// done; on addr, SCAN resumes at scan. When after is set, a page stopped
// inside the SCAN batch that started at scan, read with COUNT count and
// ending at SCAN cursor end: that batch's keys up to after (in byte
// order) were returned, and a key of that batch's buckets is listed again
// only when it sorts after it. The batch is read again with its count, but
// that reads other buckets when keys of the batch were added or deleted
// meanwhile (SCAN's COUNT counts keys, not buckets): the keys up to after
// are then skipped only from a read that did not pass end (see covered),
// since the buckets past end were not read before.
type listCursor struct {
	addr  string
	scan  uint64
	count int64
	end   uint64
	after string
}

// encode returns the List cursor of c for the walk of codec.
func (c listCursor) encode(codec backends.CursorCodec) string {
	return codec.Encode(c.addr, strconv.FormatUint(c.scan, 10), strconv.FormatInt(c.count, 10),
		strconv.FormatUint(c.end, 10), c.after)
}

// minScanCount is the smallest SCAN COUNT of a batch List starts.
const minScanCount = 100

// parseListCursor parses a cursor of encode for codec's parameters, on
// the store of key prefix prefix; "" is the start of a walk. It refuses,
// with a *backends.ListParamsError, anything encode does not return, a
// cursor returned for other parameters, and one whose after is not a key
// of a record of this store, or whose batch fields do not go with it.
func parseListCursor(s string, codec backends.CursorCodec, prefix string) (listCursor, error) {
	f, err := codec.Decode(s, 5)
	if err != nil || f == nil {
		return listCursor{}, err
	}
	scan, err1 := backends.CursorUint(f[1], math.MaxUint64)
	count, err2 := backends.CursorUint(f[2], backends.MaxListLimit)
	end, err3 := backends.CursorUint(f[3], math.MaxUint64)
	if err := cmp.Or(err1, err2, err3); err != nil {
		return listCursor{}, err
	}
	c := listCursor{addr: f[0], scan: scan, count: int64(count), end: end, after: f[4]}
	if c.after == "" {
		if c.count != 0 || c.end != 0 {
			return listCursor{}, backends.BadCursor()
		}
		return c, nil
	}
	scope, key, ok := parseRecordKey(prefix, c.after)
	if !ok || scope == "" || backends.CheckCursorRecord(scope, key) != nil || c.count < 1 {
		return listCursor{}, backends.BadCursor()
	}
	return c, nil
}

// covered reports whether a SCAN that returned cursor next read no bucket
// past end, the cursor that ended a batch read before (0 for both: the
// end of the primary's keyspace). SCAN visits the buckets in the order of
// their reversed index bits, across resizes too, so its cursors compare
// as bit-reversed numbers; ordered is false when that order is not known
// (a Cluster primary: from Redis 7.4 its cursors carry a slot number in
// their low bits), and then only next == end is known to be covered.
func covered(next, end uint64, ordered bool) bool {
	switch {
	case end == 0 || next == end:
		return true
	case next == 0 || !ordered:
		return false
	}
	return bits.Reverse64(next) < bits.Reverse64(end)
}

// List implements backends.Lister with SCAN (never KEYS), visiting every
// primary of a Cluster in turn, and reads of the keys found (get.lua:
// the record and its PTTL, atomically per key), pipelined per primary. A
// page is at most scanRoundsPerPage SCAN batches (reading again a batch
// that changed since a page stopped inside it may halve its COUNT up to
// 14 times, a SCAN call each). A
// walk sees every record present throughout it at least once, as SCAN
// does, also when keys are added or deleted between pages; a
// primary that fails over during the walk may be cut short (the walk
// continues with the next one).
func (s *Store) List(ctx context.Context, p backends.ListParams) (backends.ListPage, error) {
	const op = "list"
	if err := ctx.Err(); err != nil {
		return backends.ListPage{}, translate(ctx, op, err)
	}
	if err := p.Validate(); err != nil {
		return backends.ListPage{}, err
	}
	codec := p.Cursors()
	c, err := parseListCursor(p.Cursor, codec, s.prefix)
	if err != nil {
		return backends.ListPage{}, err
	}
	if p.State == backends.StateCompleted && p.OlderThan > 0 {
		return backends.ListPage{}, nil // a completed record's Age is zero
	}
	limit := p.PageLimit()
	nodes, err := s.nodes(ctx)
	if err != nil {
		return backends.ListPage{}, translate(ctx, op, err)
	}
	i, _ := slices.BinarySearchFunc(nodes, c.addr, func(n node, addr string) int { return strings.Compare(n.addr, addr) })
	if i < len(nodes) && nodes[i].addr != c.addr {
		c = listCursor{addr: nodes[i].addr} // that primary is gone: start the next one
	}
	pattern := s.listPattern(p)
	count := int64(max(limit, minScanCount))
	_, cluster := s.client.(*redis.ClusterClient)
	var page backends.ListPage
	for round := 0; i < len(nodes); round++ {
		if round == scanRoundsPerPage {
			page.Next = c.encode(codec)
			return page, nil
		}
		n := nodes[i]
		batch := count
		if c.after != "" {
			batch = c.count // the batch the cursor's after is in
		}
		var keys []string
		var next uint64
		for {
			keys, next, err = n.client.Scan(ctx, c.scan, pattern, batch).Result()
			if err != nil {
				return backends.ListPage{}, translate(ctx, op, err)
			}
			if c.after == "" || cluster || batch == 1 || covered(next, c.end, true) {
				break
			}
			// The batch grew past its end (keys of it were deleted): read
			// fewer buckets, whose keys up to after were returned.
			batch = max(1, batch/2)
		}
		skip := c.after != "" && covered(next, c.end, !cluster)
		slices.Sort(keys)
		keys = slices.Compact(keys)
		if skip {
			from, _ := slices.BinarySearch(keys, c.after+"\x00")
			keys = keys[from:]
		}
		found, err := s.fetch(ctx, n.client, keys, p)
		if err != nil {
			return backends.ListPage{}, err
		}
		room := limit - len(page.Records)
		for _, f := range found[:min(room, len(found))] {
			page.Records = append(page.Records, f.listed)
		}
		if len(found) > room {
			page.Next = listCursor{addr: n.addr, scan: c.scan, count: batch, end: next, after: found[room-1].redisKey}.encode(codec)
			return page, nil
		}
		if skip && next != c.end {
			// Short of the batch's end: its keys up to after are still done.
			c = listCursor{addr: n.addr, scan: next, count: c.count, end: c.end, after: c.after}
		} else {
			c = listCursor{addr: n.addr, scan: next}
		}
		if next == 0 {
			i++
			if i < len(nodes) {
				c = listCursor{addr: nodes[i].addr}
			}
		}
		if i < len(nodes) && len(page.Records) == limit {
			page.Next = c.encode(codec)
			return page, nil
		}
	}
	return page, nil
}

// found is a listed record and its Redis key.
type found struct {
	redisKey string
	listed   backends.Listed
}

// listPattern is the SCAN pattern of p: the store's prefix, and the
// scope and key prefix when the scope is given (the key encoding puts the
// scope first), and the "}" that ends every record key, so that SCAN
// leaves out the keys of checkpoints (see recordKeys).
func (s *Store) listPattern(p backends.ListParams) string {
	if p.Scope == "" {
		return recordPattern(s.prefix)
	}
	sc := escape(p.Scope)
	return globEscape(s.prefix+"{"+strconv.Itoa(len(sc))+":"+sc+":"+escape(p.KeyPrefix)) + "*}"
}

// recordPattern is the SCAN pattern of every record key of the store of
// prefix (and of no checkpoints key).
func recordPattern(prefix string) string { return globEscape(prefix+"{") + "*}" }

// globEscape escapes the characters SCAN's MATCH gives a meaning to.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// fetch reads the records of keys (all on client's primary) in one
// pipeline and returns those p selects, in the order of keys. A key that
// vanished meanwhile is skipped.
func (s *Store) fetch(ctx context.Context, client redis.Cmdable, keys []string, p backends.ListParams) ([]found, error) {
	const op = "list"
	var out []found
	err := readRecords(ctx, op, client, keys, func(k, raw string, ttl int64) error {
		scope, key, ok := parseRecordKey(s.prefix, k)
		if !ok {
			return nil // not a record key of this store
		}
		if p.Scope != "" && scope != p.Scope || !strings.HasPrefix(key, p.KeyPrefix) {
			return nil
		}
		if (raw[0] == stateCompleted) != (p.State == backends.StateCompleted) {
			return nil // zero selects pending and held records
		}
		r, err := decodeRecord(op, raw)
		if err != nil {
			return err
		}
		rec := r.record(ttl)
		rec.Outcome = nil // listed without it
		if p.State != 0 && rec.State != p.State || rec.Age < p.OlderThan {
			return nil
		}
		out = append(out, found{redisKey: k, listed: backends.Listed{Scope: scope, Key: key, Record: rec}})
		return nil
	})
	return out, err
}

// readRecords reads the record and TTL of each of keys (all on client's
// primary) with get.lua, atomically per key, in one pipeline that loads
// the script first (a pipeline cannot fall back from EVALSHA to EVAL),
// and calls each for every key that holds a record, in the order of keys.
func readRecords(ctx context.Context, op string, client redis.Cmdable, keys []string, each func(key, raw string, ttl int64) error) error {
	if len(keys) == 0 {
		return nil
	}
	pipe := client.Pipeline()
	pipe.ScriptLoad(ctx, redislua.Get)
	cmds := make([]*redis.Cmd, len(keys))
	for i, k := range keys {
		cmds[i] = getScript.EvalSha(ctx, pipe, []string{k})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return translate(ctx, op, err)
	}
	for i, k := range keys {
		v, err := cmds[i].Result()
		if err != nil {
			return translate(ctx, op, err)
		}
		if v == int64(0) {
			continue // vanished since SCAN
		}
		raw, ttl, err := recordReply(op, v)
		if err != nil {
			return err
		}
		if err := each(k, raw, ttl); err != nil {
			return err
		}
	}
	return nil
}

// parseRecordKey inverts recordKey: prefix "{" len(s) ":" s ":" k "}".
func parseRecordKey(prefix, raw string) (scope, key string, ok bool) {
	rest, ok := strings.CutPrefix(raw, prefix+"{")
	if !ok || !strings.HasSuffix(rest, "}") {
		return "", "", false
	}
	rest = rest[:len(rest)-1]
	num, rest, ok := strings.Cut(rest, ":")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 0 || n >= len(rest) || rest[n] != ':' {
		return "", "", false
	}
	s, k := rest[:n], rest[n+1:]
	if strings.Contains(s, "}") || strings.Contains(k, "}") {
		return "", "", false
	}
	return unescapeKeyPart.Replace(s), unescapeKeyPart.Replace(k), true
}

// unescapeKeyPart inverts escape, in one pass.
var unescapeKeyPart = strings.NewReplacer("%7D", "}", "%25", "%")

// Count implements backends.Lister by walking every record of the store
// with SCAN (on every primary of a Cluster) and get.lua per key: linear
// in the keyspace.
// Expired is always zero (Redis drops expired keys itself); SizeBytes is
// the bytes of keys and values.
func (s *Store) Count(ctx context.Context) (backends.Counts, error) {
	const op = "count"
	var c backends.Counts
	nodes, err := s.nodes(ctx)
	if err != nil {
		return c, translate(ctx, op, err)
	}
	pattern := recordPattern(s.prefix)
	for _, n := range nodes {
		var cursor uint64
		for {
			keys, next, err := n.client.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return c, translate(ctx, op, err)
			}
			if err := s.countKeys(ctx, n.client, keys, &c); err != nil {
				return c, err
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return c, nil
}

func (s *Store) countKeys(ctx context.Context, client redis.Cmdable, keys []string, c *backends.Counts) error {
	const op = "count"
	return readRecords(ctx, op, client, keys, func(k, raw string, ttl int64) error {
		if _, _, ok := parseRecordKey(s.prefix, k); !ok {
			return nil
		}
		r, err := decodeRecord(op, raw)
		if err != nil {
			return err
		}
		c.Stored++
		c.SizeBytes += int64(len(k) + len(raw))
		rec := r.record(ttl)
		switch rec.State {
		case backends.StateCompleted:
			c.Completed++
		case backends.StatePending:
			c.Pending++
			c.OldestPending = max(c.OldestPending, rec.Age)
		case backends.StateHeld:
			c.Held++
			c.OldestHeld = max(c.OldestHeld, rec.Age)
		}
		return nil
	})
}

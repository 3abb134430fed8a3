package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/stagedoor/once/backends"
)

var _ backends.Lister = (*Store)(nil)

// Hold implements backends.Store in one UPDATE (and a read to recognise
// a re-send). The held row enters the partial index on held_at.
func (s *Store) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	now := s.nowMicros()
	until := deadline(now, p.For)
	res, err := s.writer.ExecContext(ctx, s.sql.hold, now, until, p.Code, p.Message,
		max(until, deadline(now, p.Retention)), p.Scope, p.Key, p.Owner)
	n, err := affected("hold", res, err)
	if err != nil || n == 1 {
		if n == 1 {
			s.watch.notify(p.Scope, p.Key)
		}
		return n == 1, err
	}
	r, err := s.read(ctx, s.reader, "hold", p.Scope, p.Key)
	if err != nil {
		return false, err
	}
	return r.live(now) && r.held() && r.owner.String == p.Owner, nil // a re-send
}

// LeaseHeld implements backends.Store in one UPDATE, and a read to
// report the record when it did not apply.
func (s *Store) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	now := s.nowMicros()
	res, err := s.writer.ExecContext(ctx, s.sql.leaseHeld, p.Owner, deadline(now, p.Lease), p.Scope, p.Key, now)
	n, err := affected("leaseheld", res, err)
	if err != nil || n == 1 {
		return backends.LeaseHeldResult{Leased: n == 1}, err
	}
	r, err := s.read(ctx, s.reader, "leaseheld", p.Scope, p.Key)
	if err != nil || !r.live(now) {
		return backends.LeaseHeldResult{}, err
	}
	return backends.LeaseHeldResult{Existing: r.record(now)}, nil
}

// List implements backends.Lister with keyset pagination in (scope, key)
// order: pending rows along the primary key, then held rows from their
// partial index.
func (s *Store) List(ctx context.Context, p backends.ListParams) (backends.ListPage, error) {
	const op = "list"
	if err := p.Validate(); err != nil {
		return backends.ListPage{}, err
	}
	held, scope, key, err := parseCursor(p.Cursor, p)
	if err != nil {
		return backends.ListPage{}, err
	}
	if p.Cursor == "" {
		held = p.State == backends.StateHeld
	}
	limit := p.Limit
	if limit <= 0 {
		limit = backends.DefaultListLimit
	}
	limit = min(limit, backends.MaxListLimit)
	now := s.nowMicros()
	q := s.sql.listPending
	if held {
		q = s.sql.listHeld
	}
	rows, err := s.reader.QueryContext(ctx, q, now-micros(p.OlderThan), p.Scope, p.KeyPrefix, scope, key, now, limit)
	if err != nil {
		return backends.ListPage{}, interpretError(op, err)
	}
	defer rows.Close()
	var page backends.ListPage
	for rows.Next() {
		var l backends.Listed
		var r row
		if err := rows.Scan(append([]any{&l.Scope, &l.Key}, r.dest()...)...); err != nil {
			return backends.ListPage{}, interpretError(op, err)
		}
		r.found = true
		l.Record = r.record(now)
		l.ExpiresIn = remaining(now, r.expiresAt)
		page.Records = append(page.Records, l)
	}
	if err := rows.Err(); err != nil {
		return backends.ListPage{}, interpretError(op, err)
	}
	switch {
	case len(page.Records) == limit:
		last := page.Records[len(page.Records)-1]
		page.Next = cursor(p, held, last.Scope, last.Key)
	case !held && p.State == 0:
		page.Next = cursor(p, true, "", "")
	}
	return page, nil
}

// cursor is the List cursor of p after (scope, key) in the pending or
// held walk: p's ListParams.CursorBinding, "p" or "h", and the position.
func cursor(p backends.ListParams, held bool, scope, key string) string {
	h := "p"
	if held {
		h = "h"
	}
	return p.CursorBinding() + "." + h + "." + hex.EncodeToString([]byte(scope)) + "." + hex.EncodeToString([]byte(key))
}

// maxCursorLen bounds the cursors cursor returns.
const maxCursorLen = 17 + 3 + 3 + 2*backends.MaxScopeLen + 2*backends.MaxKeyLen

// parseCursor parses a cursor of cursor for p; "" is the start of a
// walk. It refuses, with a *backends.ListParamsError, anything cursor
// does not return (a non-canonical spelling included), a cursor returned
// for other parameters, and one walking a state p does not select.
func parseCursor(c string, p backends.ListParams) (held bool, scope, key string, err error) {
	if c == "" {
		return false, "", "", nil
	}
	if len(c) > maxCursorLen {
		return false, "", "", backends.BadCursor()
	}
	parts := strings.Split(c, ".")
	if len(parts) != 4 || (parts[1] != "p" && parts[1] != "h") {
		return false, "", "", backends.BadCursor()
	}
	s, err1 := hex.DecodeString(parts[2])
	k, err2 := hex.DecodeString(parts[3])
	if err1 != nil || err2 != nil || len(s) > backends.MaxScopeLen || len(k) > backends.MaxKeyLen ||
		parts[1]+"."+hex.EncodeToString(s)+"."+hex.EncodeToString(k) != c[len(parts[0])+1:] {
		return false, "", "", backends.BadCursor()
	}
	if err := p.CheckCursorBinding(parts[0]); err != nil {
		return false, "", "", err
	}
	held = parts[1] == "h"
	if p.State == backends.StatePending && held || p.State == backends.StateHeld && !held {
		return false, "", "", backends.BadCursor()
	}
	return held, string(s), string(k), nil
}

// Count implements backends.Lister in one statement that reads the whole
// table. SizeBytes is the bytes of keys, fingerprints and outcomes.
func (s *Store) Count(ctx context.Context) (backends.Counts, error) {
	now := s.nowMicros()
	var c backends.Counts
	var oldestP, oldestH int64
	err := s.reader.QueryRowContext(ctx, s.sql.count, now).
		Scan(&c.Pending, &c.Held, &c.Completed, &oldestP, &oldestH, &c.Expired, &c.Stored, &c.SizeBytes)
	if errors.Is(err, sql.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return backends.Counts{}, interpretError("count", err)
	}
	c.OldestPending, c.OldestHeld = remaining(oldestP, now), remaining(oldestH, now)
	return c, nil
}

package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

var _ backends.Lister = (*Store)(nil)

// Hold implements backends.Store in one UPDATE (and a read to recognise
// a re-send). The held row enters the partial index on held_at.
func (s *Store) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	return s.hold(ctx, s.pool(), p)
}

func (s *Store) hold(ctx context.Context, h on, p backends.HoldParams) (bool, error) {
	if err := checkWrite("hold", p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	if err := checkHeld("hold", p.Code, p.Message); err != nil {
		return false, err
	}
	now := s.nowMicros()
	until := deadline(now, p.For)
	res, err := h.writer.ExecContext(ctx, s.sql.hold, now, until, p.Code, p.Message,
		max(until, deadline(now, p.Retention)), p.Scope, p.Key, p.Owner)
	n, err := affected("hold", res, err)
	if err != nil || n == 1 {
		if n == 1 {
			s.watch.notify(p.Scope, p.Key)
		}
		return n == 1, err
	}
	r, err := s.read(ctx, h.reader, "hold", p.Scope, p.Key)
	if err != nil {
		return false, err
	}
	return r.live(now) && r.held() && r.owner.String == p.Owner, nil // a re-send
}

// LeaseHeld implements backends.Store in one UPDATE, and a read to
// report the record when it did not apply.
func (s *Store) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	return s.leaseHeld(ctx, s.pool(), p)
}

func (s *Store) leaseHeld(ctx context.Context, h on, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	if err := checkWrite("leaseheld", p.Scope, p.Key, p.Owner, nil); err != nil {
		return backends.LeaseHeldResult{}, err
	}
	now := s.nowMicros()
	res, err := h.writer.ExecContext(ctx, s.sql.leaseHeld, p.Owner, deadline(now, p.Lease), p.Scope, p.Key, now)
	n, err := affected("leaseheld", res, err)
	if err != nil || n == 1 {
		return backends.LeaseHeldResult{Leased: n == 1}, err
	}
	r, err := s.read(ctx, h.reader, "leaseheld", p.Scope, p.Key)
	if err != nil || !r.live(now) {
		return backends.LeaseHeldResult{}, err
	}
	return backends.LeaseHeldResult{Existing: r.record(now)}, nil
}

// List implements backends.Lister with keyset pagination in (scope, key)
// order: pending and completed rows along the primary key, held rows from
// their partial index; for State zero, the pending rows, then the held.
func (s *Store) List(ctx context.Context, p backends.ListParams) (backends.ListPage, error) {
	const op = "list"
	if err := p.Validate(); err != nil {
		return backends.ListPage{}, err
	}
	codec := p.Cursors()
	state, scope, key, err := parseCursor(p.Cursor, codec)
	if err != nil {
		return backends.ListPage{}, err
	}
	if p.State == backends.StateCompleted && p.OlderThan > 0 {
		return backends.ListPage{}, nil // a completed record's Age is zero
	}
	if p.Cursor == "" {
		state = cmp.Or(p.State, backends.StatePending)
	}
	limit := p.PageLimit()
	now := s.nowMicros()
	q := s.sql.listPending
	switch state {
	case backends.StateHeld:
		q = s.sql.listHeld
	case backends.StateCompleted:
		q = s.sql.listCompleted
	}
	rows, err := s.reader.QueryContext(ctx, q, now-sqlstore.AgeMicros(p.OlderThan), p.Scope, p.KeyPrefix, scope, key, now, limit)
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
		l.Record.Outcome = nil // listed without it
		l.Record.ExpiresIn = remaining(now, r.expiresAt)
		page.Records = append(page.Records, l)
	}
	if err := rows.Err(); err != nil {
		return backends.ListPage{}, interpretError(op, err)
	}
	switch {
	case len(page.Records) == limit:
		last := page.Records[len(page.Records)-1]
		page.Next = cursor(codec, state, last.Scope, last.Key)
	case state == backends.StatePending && p.State == 0:
		page.Next = cursor(codec, backends.StateHeld, "", "")
	}
	return page, nil
}

// cursor is the List cursor of codec's walk of state after (scope, key).
func cursor(codec backends.CursorCodec, state backends.State, scope, key string) string {
	return codec.Encode(state.String(), scope, key)
}

// parseCursor parses a cursor of cursor for codec's parameters; "" is
// the start of a walk. It refuses, with a *backends.ListParamsError,
// anything cursor does not return, a cursor returned for other
// parameters, one walking a state the parameters do not select, and a
// scope or key no record can have.
func parseCursor(c string, codec backends.CursorCodec) (state backends.State, scope, key string, err error) {
	f, err := codec.Decode(c, 3)
	if err != nil || f == nil {
		return 0, "", "", err
	}
	st, err := codec.State(f[0])
	if err != nil {
		return 0, "", "", err
	}
	if err := backends.CheckCursorRecord(f[1], f[2]); err != nil {
		return 0, "", "", err
	}
	return st, f[1], f[2], nil
}

// Count implements backends.Lister in one statement that reads the whole
// table. SizeBytes is the bytes of keys, fingerprints and outcomes.
// OldestPending and OldestHeld are never negative (see age).
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
	c.OldestPending, c.OldestHeld = age(oldestP, now), age(oldestH, now)
	return c, nil
}

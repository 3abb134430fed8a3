package harness

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
)

// SeedStatements are the seed's three statements on one SQL database,
// written against its driver: the raw baselines of PostgreSQL, MariaDB and
// SQLite differ only in them. Each is one round trip.
type SeedStatements struct {
	// Insert claims key for hash, reporting whether it inserted (INSERT …
	// ON CONFLICT DO NOTHING RETURNING, or INSERT IGNORE).
	Insert func(ctx context.Context, key string, hash []byte) (won bool, err error)
	// Complete stores the response body of key (UPDATE).
	Complete func(ctx context.Context, key string, body []byte) error
	// Fetch reads key's row (SELECT): its hash, its response body and
	// whether a response is stored.
	Fetch func(ctx context.Context, key string) (hash, body []byte, hasResponse bool, err error)
}

// SeedTarget is the seed's mechanism over s: a first execution is the
// insert, then the completion; every other path is the same insert, which
// loses, then a fetch of the row, whose hash and response decide replay,
// in progress or mismatch. Like once.Do, it runs charge and encodes its
// payment before the completion, and decodes the replayed payment (see
// RawResult, RawReplay). It counts a round trip per statement, and
// stores the hot key's response and the pending key's claim first.
func SeedTarget(ctx context.Context, s SeedStatements) (*Target, error) {
	t := &Target{}
	insert := func(ctx context.Context, key string, hash []byte) (bool, error) {
		t.Trips.Add(1)
		return s.Insert(ctx, key, hash)
	}
	first := func(ctx context.Context, key string) error {
		if won, err := insert(ctx, key, FpA); err != nil || !won {
			return fmt.Errorf("raw insert: %v %v", err, won)
		}
		body, err := RawResult(ctx)
		if err != nil {
			return err
		}
		t.Trips.Add(1)
		if err := s.Complete(ctx, key, body); err != nil {
			return fmt.Errorf("raw complete: %w", err)
		}
		return nil
	}
	if err := first(ctx, HotKey); err != nil {
		return nil, err
	}
	if won, err := insert(ctx, PendingKey, FpA); err != nil || !won {
		return nil, fmt.Errorf("seed in-progress key: %v %v", err, won)
	}
	// lost: the insert lost, then the row decides. wantResponse: a stored
	// response (replay, mismatch) or none (in progress).
	lost := func(ctx context.Context, key string, hash []byte, wantResponse, wantMatch bool) error {
		if won, err := insert(ctx, key, hash); err != nil || won {
			return fmt.Errorf("raw insert of %s: %v %v", key, err, won)
		}
		t.Trips.Add(1)
		h, body, has, err := s.Fetch(ctx, key)
		if err != nil {
			return fmt.Errorf("raw fetch of %s: %w", key, err)
		}
		if bytes.Equal(h, hash) != wantMatch || (wantMatch && has != wantResponse) {
			return fmt.Errorf("raw fetch of %s: hash %q response %v", key, h, has)
		}
		if wantMatch && wantResponse {
			return RawReplay(body)
		}
		return nil
	}
	var keys KeySeq
	t.First = first
	t.Replay = func(ctx context.Context, key string) error { return lost(ctx, key, FpA, true, true) }
	t.Ops[PathFirst] = func(ctx context.Context) error { return first(ctx, keys.Next("")) }
	t.Ops[PathReplay] = func(ctx context.Context) error { return lost(ctx, HotKey, FpA, true, true) }
	t.Ops[PathInProgress] = func(ctx context.Context) error { return lost(ctx, PendingKey, FpA, false, true) }
	t.Ops[PathMismatch] = func(ctx context.Context) error { return lost(ctx, HotKey, FpB, true, false) }
	return t, nil
}

// OneRow is the error of a database/sql statement that must change exactly
// one row.
func OneRow(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("%d rows, %v", n, err)
	}
	return nil
}

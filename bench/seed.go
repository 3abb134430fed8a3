package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
)

// seedStatements are the seed's three statements on one SQL database,
// written against its driver: the raw baselines of PostgreSQL, MariaDB and
// SQLite differ only in them. Each is one round trip.
type seedStatements struct {
	// insert claims key for hash, reporting whether it inserted (INSERT …
	// ON CONFLICT DO NOTHING RETURNING, or INSERT IGNORE).
	insert func(ctx context.Context, key string, hash []byte) (won bool, err error)
	// complete stores the response body of key (UPDATE).
	complete func(ctx context.Context, key string, body []byte) error
	// fetch reads key's row (SELECT): its hash, its response body and
	// whether a response is stored.
	fetch func(ctx context.Context, key string) (hash, body []byte, hasResponse bool, err error)
}

// seedTarget is the seed's mechanism over s: a first execution is the
// insert, then the completion; every other path is the same insert, which
// loses, then a fetch of the row, whose hash and response decide replay,
// in progress or mismatch. Like once.Do, it runs charge and encodes its
// payment before the completion, and decodes the replayed payment (see
// rawResult, rawReplay). It counts a round trip per statement, and
// stores the hot key's response and the pending key's claim first.
func seedTarget(ctx context.Context, s seedStatements) (*target, error) {
	t := &target{}
	insert := func(ctx context.Context, key string, hash []byte) (bool, error) {
		t.trips.Add(1)
		return s.insert(ctx, key, hash)
	}
	first := func(ctx context.Context, key string) error {
		if won, err := insert(ctx, key, fpA); err != nil || !won {
			return fmt.Errorf("raw insert: %v %v", err, won)
		}
		body, err := rawResult(ctx)
		if err != nil {
			return err
		}
		t.trips.Add(1)
		if err := s.complete(ctx, key, body); err != nil {
			return fmt.Errorf("raw complete: %w", err)
		}
		return nil
	}
	if err := first(ctx, hotKey); err != nil {
		return nil, err
	}
	if won, err := insert(ctx, pendingKey, fpA); err != nil || !won {
		return nil, fmt.Errorf("seed in-progress key: %v %v", err, won)
	}
	// lost: the insert lost, then the row decides. wantResponse: a stored
	// response (replay, mismatch) or none (in progress).
	lost := func(ctx context.Context, key string, hash []byte, wantResponse, wantMatch bool) error {
		if won, err := insert(ctx, key, hash); err != nil || won {
			return fmt.Errorf("raw insert of %s: %v %v", key, err, won)
		}
		t.trips.Add(1)
		h, body, has, err := s.fetch(ctx, key)
		if err != nil {
			return fmt.Errorf("raw fetch of %s: %w", key, err)
		}
		if bytes.Equal(h, hash) != wantMatch || (wantMatch && has != wantResponse) {
			return fmt.Errorf("raw fetch of %s: hash %q response %v", key, h, has)
		}
		if wantMatch && wantResponse {
			return rawReplay(body)
		}
		return nil
	}
	var keys keySeq
	t.ops[pathFirst] = func(ctx context.Context) error { return first(ctx, keys.next("")) }
	t.ops[pathReplay] = func(ctx context.Context) error { return lost(ctx, hotKey, fpA, true, true) }
	t.ops[pathInProgress] = func(ctx context.Context) error { return lost(ctx, pendingKey, fpA, false, true) }
	t.ops[pathMismatch] = func(ctx context.Context) error { return lost(ctx, hotKey, fpB, true, false) }
	return t, nil
}

// oneRow is the error of a database/sql statement that must change exactly
// one row.
func oneRow(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("%d rows, %v", n, err)
	}
	return nil
}

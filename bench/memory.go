package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stagedoor/once/backends/memory"
)

// setupMemory returns the library over a fresh memory store and its
// baseline: a hand-written sync.Map doing the same work per op (claim:
// look up, check expiry, insert a pending record with fingerprint, owner
// and lease; complete: check the owner and swap in the completed record;
// replay / in progress / mismatch: one lookup and a fingerprint compare).
// Like once.Do it runs charge and encodes the payment it stores, and
// decodes a replayed one (rawResult, rawReplay); it runs no context and no
// lease timer: the ratio shows the library's whole overhead over a bare
// map.
func setupMemory(ctx context.Context, id string) (*suite, error) {
	lib, err := libraryTarget(ctx, memory.New(nil), "lib-"+id, nil)
	if err != nil {
		return nil, err
	}
	cached, err := cachedLibraryTarget(ctx, memory.New(nil), id)
	if err != nil {
		return nil, err
	}
	raw, err := rawMemoryTarget()
	if err != nil {
		return nil, err
	}
	return &suite{lib: lib, cached: cached, raw: raw, cleanup: func() {}}, nil
}

type rawRec struct {
	completed   bool
	fingerprint []byte
	owner       string
	leaseUntil  time.Time
	expiresAt   time.Time
	outcome     []byte
}

type rawMap struct{ m sync.Map } // scope + "\x00" + key -> *rawRec

var errRaw = errors.New("raw baseline: unexpected state")

// claim inserts a pending record unless a live one exists, and returns the
// existing record otherwise.
func (r *rawMap) claim(k string, fp []byte, owner string) (existing *rawRec, claimed bool) {
	now := time.Now()
	rec := &rawRec{fingerprint: bytes.Clone(fp), owner: owner, leaseUntil: now.Add(lease), expiresAt: now.Add(retention)}
	for {
		v, loaded := r.m.LoadOrStore(k, rec)
		if !loaded {
			return nil, true
		}
		cur := v.(*rawRec)
		if now.Before(cur.expiresAt) {
			return cur, false
		}
		if r.m.CompareAndSwap(k, cur, rec) {
			return nil, true
		}
	}
}

// lookup is the read-only claim of a key that is known to exist: what the
// replay, in-progress and mismatch paths reduce to.
func (r *rawMap) lookup(k string) (*rawRec, bool) {
	v, ok := r.m.Load(k)
	if !ok {
		return nil, false
	}
	rec := v.(*rawRec)
	return rec, time.Now().Before(rec.expiresAt)
}

func (r *rawMap) complete(k, owner string, outcome []byte) bool {
	v, ok := r.m.Load(k)
	if !ok {
		return false
	}
	cur := v.(*rawRec)
	now := time.Now()
	if cur.completed || cur.owner != owner || !now.Before(cur.expiresAt) {
		return false
	}
	next := &rawRec{completed: true, fingerprint: cur.fingerprint, outcome: bytes.Clone(outcome), expiresAt: now.Add(retention)}
	return r.m.CompareAndSwap(k, cur, next)
}

func rawMemoryTarget() (*target, error) {
	t := &target{}
	var r rawMap
	const scope = "raw\x00"
	hot, pending := scope+hotKey, scope+pendingKey
	body, err := rawResult(context.Background())
	if err != nil {
		return nil, err
	}
	if _, ok := r.claim(hot, fpA, "seed"); !ok || !r.complete(hot, "seed", body) {
		return nil, fmt.Errorf("seed replay key: %w", errRaw)
	}
	if _, ok := r.claim(pending, fpA, token()); !ok {
		return nil, fmt.Errorf("seed in-progress key: %w", errRaw)
	}
	var keys keySeq
	t.Ops[pathFirst] = func(ctx context.Context) error {
		k, owner := keys.Next(scope), token()
		t.Trips.Add(1)
		if _, ok := r.claim(k, fpA, owner); !ok {
			return errRaw
		}
		body, err := rawResult(ctx)
		if err != nil {
			return err
		}
		t.Trips.Add(1)
		if !r.complete(k, owner, body) {
			return errRaw
		}
		return nil
	}
	find := func(k string, fp []byte, wantCompleted, wantMatch bool) error {
		_ = token() // a claim carries a fresh owner token, as the library's does
		t.Trips.Add(1)
		rec, ok := r.lookup(k)
		if !ok || rec.completed != wantCompleted || bytes.Equal(rec.fingerprint, fp) != wantMatch {
			return errRaw
		}
		if wantCompleted && wantMatch {
			return rawReplay(rec.outcome)
		}
		return nil
	}
	t.Ops[pathReplay] = func(context.Context) error { return find(hot, fpA, true, true) }
	t.Ops[pathInProgress] = func(context.Context) error { return find(pending, fpA, false, true) }
	t.Ops[pathMismatch] = func(context.Context) error { return find(hot, fpB, true, false) }
	return t, nil
}

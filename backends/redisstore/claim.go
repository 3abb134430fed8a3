package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
)

// Claim implements backends.Store. It claims without a script; its full
// claim is one round trip that pipelines two commands:
//
//	PTTL key
//	SET key <pending record> NX PX max(lease, retention) GET
//
// The SET decides: it creates the claim when the key is absent, or
// returns the record, writing nothing. The record's state, owner,
// fingerprint and outcome come from that atomic answer; the PTTL that
// Redis runs right before it, the record's time left by the server's
// clock, supplies the durations (lease left, age, ExpiresIn; see
// record.lua). So a first claim, a replay, an in-progress duplicate and a
// fingerprint mismatch cost one PTTL and one SET (a first claim, usually
// the SET alone: below). The rare records the
// SET cannot answer for (a pending lease that lapsed, a held record whose
// hold and reconciler lease ended: takeovers) go to claim.lua, a second
// round trip, which decides again, atomically.
//
// While the Store's recent claims were nearly all new keys (fewer than
// about one in nine found a record, after at least 8 new keys in a row;
// see claimmix.Biased), Claim first sends the create alone, one command:
//
//	SET key <pending record> NX PX max(lease, retention)
//
// Its OK is a claim, and a first execution then costs that one SET. Its
// nil (the key has a record; it wrote nothing) sends the pipeline above,
// whose SET finds the record again (or creates the claim, if the key
// vanished meanwhile) and answers as above; from the claim after one that
// found a record, Claim sends the pipeline at once. A replay among new
// keys therefore takes two round trips, a replay among replays one. (The
// create has no GET because its nil is the rare answer: go-redis
// classifies a command's nil reply as an error, at a cost of allocations.)
//
// The two commands are a pipeline, not a transaction: Redis runs a
// connection's pipelined commands in order, and back to back when they
// arrive together (one write of a few hundred bytes), but may serve
// another connection between them if the pipeline is split. A write that
// lands there can change only the durations reported, never a decision:
// a lease then read from the record's previous version that seems live
// answers "in progress" (no write: the caller retries), one that seems
// lapsed goes to claim.lua; and a completed record reports at most the
// retention it was written with, so its ExpiresIn never exceeds
// its real time left by more than the time between the two commands.
// (MULTI would close the gap, but go-redis never re-sends a transaction
// whose reply was lost, while it re-sends a pipeline; and the PTTL goes
// first because go-redis inspects the first command's error, which would
// be the SET's nil on every new claim, at a cost of 23 allocations.)
//
// Checkpoints (see Checkpoint) live in a key of their own, which the
// pipeline does not read: a replay, an in-progress duplicate and a
// mismatch never transfer them, and a new claim has none (a record's
// checkpoints expire with it). The claims that return them are the ones
// claim.lua decides: a takeover, and the caller's own claim found again.
//
// A driver re-send of a claim that was applied (the create or the
// pipeline) finds the record it wrote, with its own owner token: Claim
// reports Claimed, with the record's checkpoints, which claim.lua reads
// in a further round trip (a Claim whose reply was lost is rare; the
// record's checkpoints, if any, are those of a takeover by the same
// owner).
func (s *Store) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	const op = "claim"
	if err := precheck(ctx, op, p.Scope, p.Key, p.Owner, p.Fingerprint); err != nil {
		return backends.ClaimResult{}, err
	}
	lease := millis(p.Lease)
	life := max(lease, millis(p.Retention))
	alone := s.mix.CreateFirst()
	a := s.newClaimArgs(ctx, &p, life, life-lease, alone)
	ttl, set := &a.ttlCmd, &a.setCmd
	if alone {
		err := s.client.Process(ctx, set)
		if err == nil {
			return backends.ClaimResult{Claimed: true}, nil
		}
		if !errors.Is(err, redis.Nil) {
			return backends.ClaimResult{}, translate(ctx, op, err)
		}
		// The key had a record (SET NX wrote nothing): the pipeline
		// reads it, with its time left, and records the answer in the
		// mix.
		a.full(ctx)
	}
	pipe := s.pipes.Get().(redis.Pipeliner)
	_ = pipe.BatchProcess(ctx, ttl, set)
	_, err := pipe.Exec(ctx)
	s.pipes.Put(pipe)
	if err != nil && !errors.Is(err, redis.Nil) {
		return backends.ClaimResult{}, translate(ctx, op, err)
	}
	raw, err := set.Result()
	if errors.Is(err, redis.Nil) {
		s.mix.Created()
		return backends.ClaimResult{Claimed: true}, nil
	}
	if err != nil {
		return backends.ClaimResult{}, translate(ctx, op, err)
	}
	s.mix.Found()
	t, err := ttl.Result()
	if err != nil {
		return backends.ClaimResult{}, translate(ctx, op, err)
	}
	r, err := decodeRecord(op, raw)
	if err != nil {
		return backends.ClaimResult{}, err
	}
	if r.state == backends.StatePending && r.owner == p.Owner {
		// Our own claim (a re-send): claim.lua reports it with its
		// checkpoints.
		return s.claimScripted(ctx, p, lease, life)
	}
	if t == -1 {
		return backends.ClaimResult{}, corrupt(op, "record without expiry")
	}
	if t < 0 && r.state != backends.StateCompleted {
		// -2: the key was absent at the PTTL and the record came right
		// after; claim.lua decides from its own reading.
		return s.claimScripted(ctx, p, lease, life)
	}
	switch r.state {
	case backends.StateCompleted:
		return backends.ClaimResult{Existing: r.record(t)}, nil
	case backends.StatePending:
		if t > r.leaseTail {
			return backends.ClaimResult{Existing: r.record(t)}, nil
		}
	case backends.StateHeld:
		if t > r.leaseTail || t > r.holdTail {
			return backends.ClaimResult{Existing: r.record(t)}, nil
		}
	}
	return s.claimScripted(ctx, p, lease, life)
}

// claimScripted is the claim's slow path: claim.lua decides the takeover
// of a lapsed lease or an ended hold atomically, and returns the claimed
// record's checkpoints.
func (s *Store) claimScripted(ctx context.Context, p backends.ClaimParams, lease, retention int64) (backends.ClaimResult, error) {
	const op = "claim"
	v, err := claimScript.Run(ctx, s.client, s.keys(p.Scope, p.Key), p.Owner, p.Fingerprint, lease, retention).Result()
	if err != nil {
		return backends.ClaimResult{}, translate(ctx, op, err)
	}
	if res, ok, err := claimedReply(op, v); ok || err != nil {
		return res, err
	}
	rec, err := existing(op, v)
	return backends.ClaimResult{Existing: rec}, err
}

// claimedReply reads claim.lua's reply when it claimed: 1 or 2, or
// {1 or 2, checkpoints}. ok is false for any other reply (a record).
func claimedReply(op string, v any) (res backends.ClaimResult, ok bool, err error) {
	var steps []byte
	if a, isArray := v.([]any); isArray && len(a) == 2 {
		raw, isString := a[1].(string)
		if _, isInt := a[0].(int64); !isInt {
			return res, false, nil // {record, ttl}
		}
		if !isString || raw == "" {
			return res, false, corrupt(op, "claimed reply")
		}
		v, steps = a[0], []byte(raw)
	}
	switch v {
	case int64(replyClaimed):
		return backends.ClaimResult{Claimed: true, Steps: steps}, true, nil
	case int64(replyTookOver):
		return backends.ClaimResult{Claimed: true, TookOver: true, Steps: steps}, true, nil
	}
	if steps != nil {
		return res, false, corrupt(op, "claimed reply")
	}
	return res, false, nil
}

package redisstore

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/redislua"
)

var (
	holdScript      = redis.NewScript(redislua.Hold)
	leaseHeldScript = redis.NewScript(redislua.LeaseHeld)
)

// Hold implements backends.Store with one EVALSHA. The hold's length is
// rounded and saturated as every duration (see MaxDuration), so
// backends.HoldUntilResolved holds for MaxDuration, about 292 years. It
// wakes the key's watchers: a waiter learns the key is held.
func (s *Store) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	const op = "hold"
	if err := precheck(ctx, op, p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	if field, r := backends.HeldProblem(p.Code, p.Message); r != "" {
		return false, invalid(op, strings.ToLower(field)+" "+r)
	}
	return s.runBool(ctx, op, holdScript, p.Scope, p.Key,
		p.Owner, millis(p.For), p.Code, p.Message, millis(p.Retention), s.notify)
}

// LeaseHeld implements backends.Store with one EVALSHA.
func (s *Store) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	const op = "leaseheld"
	if err := precheck(ctx, op, p.Scope, p.Key, p.Owner, nil); err != nil {
		return backends.LeaseHeldResult{}, err
	}
	v, err := leaseHeldScript.Run(ctx, s.client, s.keys(p.Scope, p.Key), p.Owner, millis(p.Lease)).Result()
	if err != nil {
		return backends.LeaseHeldResult{}, translate(ctx, op, err)
	}
	switch v {
	case int64(1):
		return backends.LeaseHeldResult{Leased: true}, nil
	case int64(0):
		return backends.LeaseHeldResult{}, nil
	}
	rec, err := existing(op, v)
	return backends.LeaseHeldResult{Existing: rec}, err
}

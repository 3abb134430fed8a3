package harness

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RawRedisTarget is the seed's mechanism written minimally against
// go-redis, one string key per record: a claim is SET key pending NX GET
// PX lease (it returns the existing value, or nil when it set ours), a
// completion SET key completed PX retention (unfenced, like the seed's
// UPDATE). A replay, an in progress and a mismatch are the claim alone:
// its GET returns the record, whose first byte tells pending from
// completed and whose fingerprint decides the mismatch; a replay decodes
// the stored payment, and a first execution runs charge and encodes it
// (RawResult, RawReplay), as once.Do does. No Lua, no owner check, no
// notification.
func RawRedisTarget(ctx context.Context, c *redis.Client, prefix string) (*Target, error) {
	t := &Target{}
	record := func(state byte, fp, outcome []byte) string {
		return string(append(append([]byte{state, byte(len(fp))}, fp...), outcome...))
	}
	claim := func(ctx context.Context, key string, fp []byte, leaseD time.Duration) (old string, won bool, err error) {
		t.Trips.Add(1)
		old, err = c.SetArgs(ctx, key, record('p', fp, nil), redis.SetArgs{Mode: "NX", Get: true, TTL: leaseD}).Result()
		if err == redis.Nil {
			return "", true, nil
		}
		return old, false, err
	}
	first := func(ctx context.Context, key string) error {
		if _, won, err := claim(ctx, key, FpA, Lease); err != nil || !won {
			return fmt.Errorf("raw claim: %v %v", err, won)
		}
		body, err := RawResult(ctx)
		if err != nil {
			return err
		}
		t.Trips.Add(1)
		if err := c.Set(ctx, key, record('c', FpA, body), Retention).Err(); err != nil {
			return fmt.Errorf("raw complete: %w", err)
		}
		return nil
	}
	hot, held := prefix+HotKey, prefix+PendingKey
	if err := first(ctx, hot); err != nil {
		return nil, err
	}
	if _, won, err := claim(ctx, held, FpA, HoldLease); err != nil || !won {
		return nil, fmt.Errorf("seed in-progress key: %v %v", err, won)
	}
	find := func(ctx context.Context, key string, fp []byte, state byte) error {
		old, won, err := claim(ctx, key, fp, Lease)
		if err != nil || won || len(old) < 2 || old[0] != state || len(old) < 2+int(old[1]) {
			return fmt.Errorf("raw claim of %s: %v %v %q", key, err, won, old)
		}
		match := old[2:2+int(old[1])] == string(fp)
		if match != bytes.Equal(fp, FpA) {
			return fmt.Errorf("raw claim of %s: fingerprint match %v", key, match)
		}
		if match && state == 'c' {
			return RawReplay([]byte(old[2+int(old[1]):]))
		}
		return nil
	}
	var keys KeySeq
	t.First = func(ctx context.Context, key string) error { return first(ctx, prefix+key) }
	t.Replay = func(ctx context.Context, key string) error { return find(ctx, prefix+key, FpA, 'c') }
	t.Ops[PathFirst] = func(ctx context.Context) error { return first(ctx, prefix+keys.Next("")) }
	t.Ops[PathReplay] = func(ctx context.Context) error { return find(ctx, hot, FpA, 'c') }
	t.Ops[PathInProgress] = func(ctx context.Context) error { return find(ctx, held, FpA, 'p') }
	t.Ops[PathMismatch] = func(ctx context.Context) error { return find(ctx, hot, FpB, 'c') }
	return t, nil
}

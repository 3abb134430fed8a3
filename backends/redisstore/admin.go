package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/redislua"
)

var _ backends.Admin = (*Store)(nil)

// The operator scripts. New does not preload them: operations are rare, and
// the first run of each costs one EVAL fallback.
var (
	getScript    = redis.NewScript(redislua.Get)
	deleteScript = redis.NewScript(redislua.Delete)
)

// Get implements backends.Admin with one script that reads the record,
// its PTTL and its checkpoints (Record.Steps), and writes nothing. An
// expired record has vanished from Redis and is reported absent.
func (s *Store) Get(ctx context.Context, scope, key string) (backends.Record, error) {
	const op = "get"
	if err := ctx.Err(); err != nil {
		return backends.Record{}, translate(ctx, op, err)
	}
	if err := checkNames(op, scope, key); err != nil {
		return backends.Record{}, err
	}
	v, err := getScript.Run(ctx, s.client, s.keys(scope, key)).Result()
	if err != nil {
		return backends.Record{}, translate(ctx, op, err)
	}
	if v == int64(0) {
		return backends.Record{}, nil
	}
	// {record, ttl} or {record, ttl, checkpoints} (see get.lua).
	var steps []byte
	if a, ok := v.([]any); ok && len(a) == 3 {
		raw, ok := a[2].(string)
		if !ok || raw == "" {
			return backends.Record{}, corrupt(op, "reply types")
		}
		v, steps = a[:2], []byte(raw)
	}
	rec, err := existing(op, v)
	if err != nil {
		return backends.Record{}, err
	}
	rec.Steps = steps
	return rec, nil
}

// Delete implements backends.Admin with one script that deletes the record
// and its checkpoints whatever its state or owner and notifies watchers as
// Release does. A pending owner's later Complete, Renew, Release and
// Checkpoint find no record and report false. When go-redis re-sends a Delete whose reply was lost
// after the server applied it, the re-send finds the key absent and
// Delete reports false: the record is gone, but false does not tell that
// it was there (see "Driver retries").
func (s *Store) Delete(ctx context.Context, scope, key string) (bool, error) {
	const op = "delete"
	if err := ctx.Err(); err != nil {
		return false, translate(ctx, op, err)
	}
	if err := checkNames(op, scope, key); err != nil {
		return false, err
	}
	return s.runBool(ctx, op, deleteScript, scope, key, s.notify)
}

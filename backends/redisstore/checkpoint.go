package redisstore

import (
	"context"

	"github.com/stagedoor/once/backends"
)

// Checkpoint implements backends.Store with one EVALSHA (checkpoint.lua),
// fenced as Complete and Renew are: it writes only over a pending record
// owned by p.Owner, whose lease may have lapsed. The checkpoints are a
// string key beside the record (see "Each record" in the package
// documentation), written with the record's own expiry (PXAT its
// PEXPIRETIME), so that they expire with it; the record is not written,
// so its lease, its expiry and every duration it reports stay as they
// were. Empty p.Steps deletes them. A re-send writes the same bytes
// again and reports true.
func (s *Store) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	const op = "checkpoint"
	if err := precheck(ctx, op, p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	return s.runBool(ctx, op, checkpointScript, p.Scope, p.Key, p.Owner, p.Steps)
}

package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/stagedoor/once/backends"
)

var _ backends.Admin = (*Store)(nil)

const (
	// getSQL reads the live row of ($1 scope, $2 key) with the lease and
	// retention left on the server's clock, in microseconds. A plain
	// SELECT: no row lock, no write.
	getSQL = `SELECT r.state, r.fingerprint, r.outcome,
	coalesce((extract(epoch FROM r.lease_until - c.now) * 1000000)::bigint, 0),
	(extract(epoch FROM r.expires_at - c.now) * 1000000)::bigint
FROM %[1]s r, (SELECT clock_timestamp() AS now) c
WHERE r.scope = $1::text AND r.key = $2::text AND r.expires_at > c.now`

	// deleteSQL deletes the row of ($1 scope, $2 key), live or expired, and
	// returns whether it was live.
	deleteSQL = `DELETE FROM %[1]s
WHERE scope = $1::text AND key = $2::text
RETURNING expires_at > clock_timestamp()`
)

// Get implements backends.Admin in one SELECT that takes no row lock and
// writes nothing; it is not blocked by a transaction holding the row.
// Lease and expiry are measured on the server's clock_timestamp().
func (s *Store) Get(ctx context.Context, scope, key string) (backends.Record, time.Duration, bool, error) {
	var (
		state             int16
		fp, outcome       []byte
		leaseUS, expireUS int64
	)
	err := s.pool.QueryRow(ctx, fmt.Sprintf(getSQL, s.cfg.qualifiedTable()), scope, key).
		Scan(&state, &fp, &outcome, &leaseUS, &expireUS)
	found, err := interpretError("get", err)
	if !found || err != nil {
		return backends.Record{}, 0, false, err
	}
	return existing(state, fp, outcome, leaseUS), fromMicros(expireUS), true, nil
}

// Delete implements backends.Admin in one DELETE of the row, whatever its
// state or owner; an expired row is deleted too but reported as absent. A
// pending owner's later Complete, Renew and Release match no row of theirs
// and report false. It waits for a transaction that holds the row (a
// claim made through InTx) to end.
func (s *Store) Delete(ctx context.Context, scope, key string) (bool, error) {
	var live bool
	err := s.pool.QueryRow(ctx, fmt.Sprintf(deleteSQL, s.cfg.qualifiedTable()), scope, key).Scan(&live)
	found, err := interpretError("delete", err)
	return found && live, err
}

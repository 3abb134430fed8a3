package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/pgsql"
)

// The fenced writes. Each is one statement conditional on the owner token
// of a live pending row, and returns a row only when it applied.
const (
	// completeSQL: $1 scope, $2 key, $3 owner, $4 outcome, $5 retention µs;
	// pgsql.Complete, documented there.
	completeSQL = pgsql.Complete

	// renewSQL: $1 scope, $2 key, $3 owner, $4 lease µs. The record lives
	// at least until the new lease ends.
	renewSQL = `UPDATE %[1]s SET
	lease_until = clock_timestamp() + $4::bigint * interval '1 microsecond',
	expires_at = greatest(expires_at, clock_timestamp() + $4::bigint * interval '1 microsecond')
WHERE scope = $1::text AND key = $2::text
	AND state = 1 AND owner = $3::text AND expires_at > clock_timestamp()
RETURNING true`

	// releaseSQL: $1 scope, $2 key, $3 owner.
	releaseSQL = `DELETE FROM %[1]s
WHERE scope = $1::text AND key = $2::text
	AND state = 1 AND owner = $3::text AND expires_at > clock_timestamp()
RETURNING true`
)

// statements holds the SQL of every operation, rendered for one table,
// and the lock_timeout that Claim and Resolve set for themselves.
type statements struct {
	claimSQL, resolveSQL, completeSQL, renewSQL, releaseSQL, sweepSQL string
	lockTimeout                                                       string
}

func newStatements(table string, lockTimeout time.Duration) statements {
	return statements{
		lockTimeout: lockTimeoutSetting(lockTimeout),
		claimSQL:    fmt.Sprintf(claimSQL, table),
		resolveSQL:  fmt.Sprintf(resolveSQL, table),
		completeSQL: fmt.Sprintf(completeSQL, table),
		renewSQL:    fmt.Sprintf(renewSQL, table),
		releaseSQL:  fmt.Sprintf(releaseSQL, table),
		sweepSQL:    fmt.Sprintf(sweepSQL, table),
	}
}

func (q statements) complete(ctx context.Context, db querier, p backends.CompleteParams) (bool, error) {
	var ok bool
	return interpretError("complete", db.QueryRow(ctx, q.completeSQL,
		p.Scope, p.Key, p.Owner, nonNil(p.Outcome), micros(p.Retention)).Scan(&ok))
}

func (q statements) renew(ctx context.Context, db querier, p backends.RenewParams) (bool, error) {
	var ok bool
	return interpretError("renew", db.QueryRow(ctx, q.renewSQL,
		p.Scope, p.Key, p.Owner, micros(p.Lease)).Scan(&ok))
}

func (q statements) release(ctx context.Context, db querier, p backends.ReleaseParams) (bool, error) {
	var ok bool
	return interpretError("release", db.QueryRow(ctx, q.releaseSQL,
		p.Scope, p.Key, p.Owner).Scan(&ok))
}

package harness

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once/internal/pgsql"
)

// RawPostgresTarget is the seed's mechanism, written minimally against
// pgx in its own table (internal/pgsql SeedTable: key, user_id,
// request_hash, response_status, response_body, created_at, unique on
// (user_id, key)): a first execution is INSERT … ON CONFLICT DO NOTHING
// RETURNING, then UPDATE of the response; every other path is the same
// insert, which returns nothing, then a SELECT of the row, whose hash and
// status decide replay, in progress or mismatch. It sends none of the
// library's statements, has no lease, owner, fencing, expiry or sweeper
// index, and makes two round trips where the library makes one.
func RawPostgresTarget(ctx context.Context, pool *pgxpool.Pool, table, user string) (*Target, error) {
	seed := strings.NewReplacer("{seed}", table)
	if _, err := pool.Exec(ctx, seed.Replace(pgsql.SeedTable)); err != nil {
		return nil, err
	}
	insertSQL, completeSQL, fetchSQL := seed.Replace(pgsql.SeedInsert), seed.Replace(pgsql.SeedComplete), seed.Replace(pgsql.SeedFetch)
	return SeedTarget(ctx, SeedStatements{
		Insert: func(ctx context.Context, key string, hash []byte) (bool, error) {
			var k string
			err := pool.QueryRow(ctx, insertSQL, key, user, hash).Scan(&k)
			if err == pgx.ErrNoRows {
				return false, nil
			}
			return err == nil, err
		},
		Complete: func(ctx context.Context, key string, body []byte) error {
			_, err := pool.Exec(ctx, completeSQL, key, user, 200, body)
			return err
		},
		Fetch: func(ctx context.Context, key string) ([]byte, []byte, bool, error) {
			var h, body []byte
			var status *int32
			err := pool.QueryRow(ctx, fetchSQL, key, user).Scan(&h, &status, &body)
			return h, body, status != nil, err
		},
	})
}

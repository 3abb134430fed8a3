package pgsql

// The seed's mechanism, written minimally against the driver: the
// benchmarks' raw baseline (bench/ and the backend's BenchmarkRawBaseline).
// The library never sends these; they exist so that its statements are
// measured against the plain statements a hand-written idempotency table
// needs, not against themselves. {seed} stands for the quoted,
// schema-qualified baseline table.
const (
	// SeedTable is the seed's six-column table, unique on (user_id, key).
	SeedTable = `CREATE TABLE IF NOT EXISTS {seed} (
	key             text        NOT NULL,
	user_id         text        NOT NULL,
	request_hash    bytea       NOT NULL,
	response_status integer,
	response_body   bytea,
	created_at      timestamptz NOT NULL,
	PRIMARY KEY (user_id, key)
)`
	// SeedInsert: $1 key, $2 user_id, $3 request_hash. Returns a row only
	// when it inserted.
	SeedInsert = `INSERT INTO {seed} (key, user_id, request_hash, created_at)
VALUES ($1::text, $2::text, $3::bytea, now())
ON CONFLICT (user_id, key) DO NOTHING RETURNING key`
	// SeedComplete: $1 key, $2 user_id, $3 status, $4 body.
	SeedComplete = `UPDATE {seed} SET response_status = $3::int, response_body = $4::bytea
WHERE user_id = $2::text AND key = $1::text`
	// SeedFetch: $1 key, $2 user_id; after a lost insert.
	SeedFetch = `SELECT request_hash, response_status, response_body FROM {seed}
WHERE user_id = $2::text AND key = $1::text`
)

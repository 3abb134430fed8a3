-- Delete (Admin): $1 scope, $2 key. Deletes the row, live or expired, and
-- returns whether it was live.
DELETE FROM {table}
WHERE scope = $1::text AND key = $2::text
RETURNING expires_at > clock_timestamp()

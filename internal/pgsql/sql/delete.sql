-- Delete (Admin): $1 scope, $2 key. Deletes the row, live or expired, and
-- returns whether it was live. {notify} wakes the key's waiters, as in
-- complete.sql (a CASE condition is always evaluated; an AND might not be).
DELETE FROM {table}
WHERE scope = $1::text AND key = $2::text
RETURNING CASE WHEN {notify} THEN expires_at > clock_timestamp() END

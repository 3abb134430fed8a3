-- Checkpoint: $1 scope, $2 key, $3 owner, $4 steps (NULL for none).
--
-- Replaces the checkpoints of a live pending row of the owner, the fence
-- of renew.sql (its lease may have lapsed as long as nobody took it
-- over), and changes nothing else: not the lease, not the expiry. A
-- re-send applies again and reports true. steps is unindexed: a HOT
-- update whenever the page has room (a large blob is stored out of line,
-- in the table's TOAST relation). Nobody waits for a checkpoint: it
-- notifies nobody. Returns no row: its command tag counts the row it
-- updated, one exactly when it applied.
UPDATE {table} SET
	steps = $4::bytea
WHERE scope = $1::text AND key = $2::text
	AND state = 1 AND owner = $3::text AND expires_at > clock_timestamp()

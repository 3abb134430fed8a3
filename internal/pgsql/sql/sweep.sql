-- Sweep: $1 the position to start after (a tid, exclusive), $2 the end of
-- the chunk (a tid, exclusive), $3 batch size. One statement of the
-- sweeper's walk over the heap.
--
-- cand reads the rows of the chunk's heap pages (a TID Range Scan: no
-- index, so the claim writes none for the sweeper) and takes at most $3
-- whose expires_at has passed, locking them with SKIP LOCKED: it never
-- waits for (nor blocks) a claim or a completion holding a row. del
-- deletes them by ctid (a TID scan). Returns how many it deleted, the
-- last one's position (where the next statement resumes when the batch
-- was full; $1 when none) and the table's size in pages.
WITH cand AS (
	SELECT ctid
	FROM {table}
	WHERE ctid > $1::tid AND ctid < $2::tid AND expires_at <= clock_timestamp()
	LIMIT $3::int
	FOR UPDATE SKIP LOCKED
), del AS (
	DELETE FROM {table}
	WHERE ctid = ANY (ARRAY (SELECT ctid FROM cand))
	RETURNING ctid
)
SELECT (SELECT count(*) FROM del),
	coalesce((SELECT max(ctid) FROM del), $1::tid),
	pg_relation_size('{table}'::regclass) / current_setting('block_size')::bigint

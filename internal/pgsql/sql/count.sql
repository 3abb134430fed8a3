-- Count: no parameters. Counts every row by state in one sequential scan
-- (for stats, not for hot paths), with the oldest pending and held ages
-- in µs, the expired rows waiting for the sweeper, and the table's size
-- on disk (indexes and TOAST included).
WITH c AS (
	SELECT clock_timestamp() AS now
)
SELECT
	count(*) FILTER (WHERE r.state = 1 AND r.expires_at > c.now),
	count(*) FILTER (WHERE r.state = 3 AND r.expires_at > c.now),
	count(*) FILTER (WHERE r.state = 2 AND r.expires_at > c.now),
	coalesce((extract(epoch FROM c.now - min(r.claimed_at) FILTER (WHERE r.state = 1 AND r.expires_at > c.now)) * 1000000)::bigint, 0),
	coalesce((extract(epoch FROM c.now - min(r.held_at) FILTER (WHERE r.state = 3 AND r.expires_at > c.now)) * 1000000)::bigint, 0),
	count(*) FILTER (WHERE r.expires_at <= c.now),
	count(r.scope),
	pg_total_relation_size('{table}'::regclass)
FROM c LEFT JOIN {table} r ON true
GROUP BY c.now

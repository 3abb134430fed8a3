-- Complete: $1 scope, $2 key, $3 owner, $4 outcome, $5 retention µs,
-- $6 the key's notification slot (pgsql.Slot, computed by the client).
--
-- Fenced by the owner token of a live row. It changes no indexed column,
-- so it is a HOT update whenever the page has room (fillfactor 90). The
-- owner stays on the completed row so that a repeated Complete by the same
-- owner with the same outcome (a retry after a lost reply) applies again,
-- keeping the first completion's expiry, instead of reading as a lost
-- lease.
--
-- {notify:$6} (see pgsql.go) wakes the key's waiters when the row changed
-- and somebody listens, in the same statement; it is always true, so the
-- statement returns true exactly when it applied. It is in the RETURNING
-- list, which the server evaluates only on the row it updated, after it
-- locked it: in the WHERE clause it would be tried on the row version the
-- statement read before waiting for a concurrent transaction that holds
-- the row (a DoTx that took the record over), holding the slot's
-- exclusive lock for all that wait, so that the key's waiters could not
-- Watch (TestLateCompletionWaitingForARowLeavesTheSlotFree). The
-- notification is delivered when the transaction commits. With the slot
-- given, the server hashes the key (SHA-256) only when it notifies, not
-- on every completion.
UPDATE {table} SET
	state = 2,
	lease_until = NULL,
	outcome = $4::bytea,
	expires_at = CASE WHEN state = 2 THEN expires_at
		ELSE clock_timestamp() + $5::bigint * interval '1 microsecond' END
WHERE scope = $1::text AND key = $2::text
	AND owner = $3::text AND expires_at > clock_timestamp()
	AND (state = 1 OR (state = 2 AND outcome = $4::bytea))
RETURNING {notify:$6}

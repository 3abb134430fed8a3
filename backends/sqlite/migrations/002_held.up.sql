-- once: the held state and listing (backends.Holder, backends.Lister).
--
-- A held record is a pending row (state 1, so the CHECK constraints of
-- 001 hold) whose held_at is set: since when it is held, until when
-- (hold_until), and the held error's code and message. Its lease_until
-- and owner are then a reconciler's lease. Every fenced write of an
-- owner (complete, renew, release) requires held_at IS NULL. The partial
-- index holds held rows only, so listing held keys never reads the table
-- and claims and completions never write it.
ALTER TABLE "once_records" ADD COLUMN held_at INTEGER;
ALTER TABLE "once_records" ADD COLUMN hold_until INTEGER;
ALTER TABLE "once_records" ADD COLUMN held_code TEXT;
ALTER TABLE "once_records" ADD COLUMN held_message TEXT;
CREATE INDEX IF NOT EXISTS "once_records_held_idx" ON "once_records" (held_at) WHERE held_at IS NOT NULL;

-- once: back to schema 001; held rows become pending rows whose lease has
-- lapsed (the next matching call takes them over).
DROP INDEX IF EXISTS "once_records_held_idx";
ALTER TABLE "once_records" DROP COLUMN held_at;
ALTER TABLE "once_records" DROP COLUMN hold_until;
ALTER TABLE "once_records" DROP COLUMN held_code;
ALTER TABLE "once_records" DROP COLUMN held_message;

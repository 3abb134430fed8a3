-- once: back to schema 002. Held rows become pending rows whose lease has
-- lapsed (the next matching call takes them over).
UPDATE "public"."once_records" SET state = 1 WHERE state = 3;

DROP INDEX IF EXISTS "public"."once_records_held_idx";

ALTER TABLE "public"."once_records"
    DROP COLUMN IF EXISTS claimed_at,
    DROP COLUMN IF EXISTS held_at,
    DROP COLUMN IF EXISTS hold_until,
    DROP COLUMN IF EXISTS held_code,
    DROP COLUMN IF EXISTS held_message;

-- once: drops the records table (with its index) and every record in it.
DROP TABLE IF EXISTS "public"."once_records";

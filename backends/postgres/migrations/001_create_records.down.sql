-- once: drops the records table and every record in it.
DROP TABLE IF EXISTS "public"."once_records";

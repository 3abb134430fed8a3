-- once: drops the records table and every record in it.
DROP TABLE IF EXISTS "once_records";

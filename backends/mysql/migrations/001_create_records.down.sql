-- once: drops the records table, every record in it, and its procedures.
-- 003's implementation, left by 003's down migration.
DROP PROCEDURE IF EXISTS `once_records_call_v2`;
-- once:statement
DROP PROCEDURE IF EXISTS `once_records_claim`;
-- once:statement
DROP PROCEDURE IF EXISTS `once_records_resolve`;
-- once:statement
DROP TABLE IF EXISTS `once_records`;

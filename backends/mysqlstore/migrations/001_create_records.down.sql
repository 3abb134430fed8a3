-- once: drops the records table, every record in it, and its procedure.
DROP PROCEDURE IF EXISTS `once_records_call_v1`;
-- once:statement
DROP TABLE IF EXISTS `once_records`;

-- once: drops the records table, every record in it, and its procedures.
DROP PROCEDURE IF EXISTS `once_records_claim`;
-- once:statement
DROP PROCEDURE IF EXISTS `once_records_resolve`;
-- once:statement
DROP TABLE IF EXISTS `once_records`;

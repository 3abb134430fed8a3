-- once: back to schema 002's procedure interface: `once_records_claim` and
-- `once_records_resolve` give 002's rows again, as wrappers of
-- `once_records_call_v2` (which stays: 002's down migration drops it).
-- Run it only once no code calls the 001 rows of those names.
/*!80000 DROP PROCEDURE IF EXISTS `once_records_claim` */ /*M! DO 0 */;
-- once:statement
CREATE /*M! OR REPLACE */ PROCEDURE `once_records_claim`(
    IN p_scope VARBINARY(255), IN p_key VARBINARY(255), IN p_fp VARBINARY(64),
    IN p_owner VARBINARY(255), IN p_lease_us BIGINT, IN p_retention_us BIGINT,
    IN p_lock_wait_s INT)
    MODIFIES SQL DATA
    SQL SECURITY INVOKER
    CALL `once_records_call_v2`(1, p_scope, p_key, p_fp, p_owner, NULL, p_lease_us, p_retention_us, p_lock_wait_s, 2);
-- once:statement
/*!80000 DROP PROCEDURE IF EXISTS `once_records_resolve` */ /*M! DO 0 */;
-- once:statement
CREATE /*M! OR REPLACE */ PROCEDURE `once_records_resolve`(
    IN p_scope VARBINARY(255), IN p_key VARBINARY(255), IN p_fp VARBINARY(64),
    IN p_outcome LONGBLOB, IN p_owner VARBINARY(255), IN p_retention_us BIGINT,
    IN p_lock_wait_s INT)
    MODIFIES SQL DATA
    SQL SECURITY INVOKER
    CALL `once_records_call_v2`(2, p_scope, p_key, p_fp, p_owner, p_outcome, 0, p_retention_us, p_lock_wait_s, 2);

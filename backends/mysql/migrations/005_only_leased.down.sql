-- once: undo 005: drop `once_records_call_v4` (v2 and v3 stay).
DROP PROCEDURE IF EXISTS `once_records_call_v4`;

-- once: undo 004: drop `once_records_call_v3` (v2, which 003 created, stays).
DROP PROCEDURE IF EXISTS `once_records_call_v3`;

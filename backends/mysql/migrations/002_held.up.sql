-- once: the held state (state 3) and listing (backends.Holder and
-- backends.Lister).
--
--   * held_at, hold_until, held_code and held_message describe a held
--     record: since when and until when it is held, and the held error's
--     code and message for operators. A held record's owner and
--     lease_until are a reconciler's token and lease (lease_until is the
--     hold's start until one leases it). A pending record's age is
--     created_at, which every claim and takeover sets already.
--   * The CHECK of 001 that allowed states 1 and 2 only is dropped. It is
--     not replaced: adding a CHECK makes InnoDB copy the whole table, and
--     only the Store's statements write the column.
--   * The index on expires_at becomes an index on (state, expires_at). The
--     hot path writes it exactly as often as it wrote the old one: a claim
--     inserts one entry, a completion changes state together with
--     expires_at (which moved the old entry already), a renewal moves it
--     only when it moves expires_at, a release or a sweep deletes it. An
--     index on held_at alone, NULL except on held rows, would be one more
--     entry inserted by every claim and deleted by every sweep: InnoDB
--     indexes NULLs, and has no partial index. With state leading, the held
--     rows are one contiguous range of the index (its size is the number
--     of held keys), and so are the pending rows: listing reads either
--     range from its cursor, never the completed rows, and Sweep reads the
--     expired part of each state's range.
--
-- On MariaDB (10.3 and later) the first ALTER is instant and the second
-- builds the new index in place without blocking writes; both tolerate a
-- second run (IF [NOT] EXISTS). MySQL 8 runs each ALTER atomically (its
-- check was named <table>_chk_1; the executable comment drops it on MySQL
-- 8.0.16 and later only, the first with CHECK constraints).
ALTER TABLE `once_records`
    ADD COLUMN /*M! IF NOT EXISTS */ held_at      DATETIME(6)    NULL,
    ADD COLUMN /*M! IF NOT EXISTS */ hold_until   DATETIME(6)    NULL,
    ADD COLUMN /*M! IF NOT EXISTS */ held_code    VARBINARY(64)  NULL,
    ADD COLUMN /*M! IF NOT EXISTS */ held_message VARBINARY(512) NULL
    /*M! , DROP CONSTRAINT IF EXISTS CONSTRAINT_1 */
    /*!80016 , DROP CHECK `once_records_chk_1` */;
-- once:statement
ALTER TABLE `once_records`
    ADD INDEX /*M! IF NOT EXISTS */ `once_records_state_idx` (state, expires_at),
    DROP INDEX /*M! IF EXISTS */ `once_records_expires_at_idx`;
-- once:statement
DROP PROCEDURE IF EXISTS `once_records_claim`;
-- once:statement
-- once_records_claim: Claim in one CALL (see 001), aware of held records.
-- It returns one row: (claimed, took_over, state, fingerprint, outcome,
-- lease_us, expire_us, age_us, hold_us, held_code, held_message), where
-- state 0 means the wait for a concurrent uncommitted claim of the key
-- exceeded p_lock_wait_s seconds, expire_us is a completed record's time
-- left, age_us a pending record's time since its claim and a held one's
-- since its hold, and hold_us a held record's hold left.
--
-- A held record stays (it is reported) while its hold or a reconciler's
-- lease is live; once both have ended it is taken over like a lapsed
-- lease, its held columns cleared.
CREATE PROCEDURE `once_records_claim`(
    IN p_scope VARBINARY(255), IN p_key VARBINARY(255), IN p_fp VARBINARY(64),
    IN p_owner VARBINARY(255), IN p_lease_us BIGINT, IN p_retention_us BIGINT,
    IN p_lock_wait_s INT)
    MODIFIES SQL DATA
    SQL SECURITY INVOKER
BEGIN
    DECLARE v_found BOOLEAN DEFAULT TRUE;
    DECLARE v_now, v_lease_until, v_expires, v_new_lease, v_new_expires DATETIME(6);
    DECLARE v_created, v_held_at, v_hold_until DATETIME(6);
    DECLARE v_state TINYINT;
    DECLARE v_fp VARBINARY(64);
    DECLARE v_owner VARBINARY(255);
    DECLARE v_outcome LONGBLOB;
    DECLARE v_code VARBINARY(64);
    DECLARE v_message VARBINARY(512);
    DECLARE v_rev BIGINT UNSIGNED;
    DECLARE v_rows, v_attempt INT DEFAULT 0;
    DECLARE v_saved_wait BIGINT DEFAULT @@SESSION.innodb_lock_wait_timeout;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
    DECLARE EXIT HANDLER FOR 1205
    BEGIN
        SET SESSION innodb_lock_wait_timeout = v_saved_wait;
        SELECT 0 AS claimed, 0 AS took_over, 0 AS state, NULL AS fingerprint, NULL AS outcome, 0 AS lease_us,
            0 AS expire_us, 0 AS age_us, 0 AS hold_us, NULL AS held_code, NULL AS held_message;
    END;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        SET SESSION innodb_lock_wait_timeout = v_saved_wait;
        RESIGNAL;
    END;
    IF p_lock_wait_s > 0 THEN
        SET SESSION innodb_lock_wait_timeout = p_lock_wait_s;
    END IF;
    attempts: LOOP
        SET v_found = TRUE;
        IF v_attempt = 0 THEN
            SELECT state, fingerprint, owner, lease_until, outcome, expires_at, revision,
                created_at, held_at, hold_until, held_code, held_message
              INTO v_state, v_fp, v_owner, v_lease_until, v_outcome, v_expires, v_rev,
                v_created, v_held_at, v_hold_until, v_code, v_message
              FROM `once_records` WHERE scope = p_scope AND `key` = p_key;
        ELSE
            SELECT state, fingerprint, owner, lease_until, outcome, expires_at, revision,
                created_at, held_at, hold_until, held_code, held_message
              INTO v_state, v_fp, v_owner, v_lease_until, v_outcome, v_expires, v_rev,
                v_created, v_held_at, v_hold_until, v_code, v_message
              FROM `once_records` WHERE scope = p_scope AND `key` = p_key
              LOCK IN SHARE MODE;
        END IF;
        SET v_now = UTC_TIMESTAMP(6);
        IF v_found AND v_expires > v_now AND v_state = 1 AND v_owner = p_owner THEN
            -- A re-send of a Claim that applied (its reply was lost).
            SELECT 1 AS claimed, 0 AS took_over, 1 AS state, NULL AS fingerprint, NULL AS outcome, 0 AS lease_us,
                0 AS expire_us, 0 AS age_us, 0 AS hold_us, NULL AS held_code, NULL AS held_message;
            LEAVE attempts;
        ELSEIF v_found AND v_expires > v_now
            AND NOT (v_state IN (1, 3) AND v_lease_until <= v_now
                AND (v_state = 1 OR v_hold_until <= v_now)
                AND (LENGTH(p_fp) = 0 OR LENGTH(v_fp) = 0 OR v_fp = p_fp)) THEN
            -- A live record that stays: a replay, a duplicate in progress, a
            -- held key or a mismatch. No lock, no write.
            SELECT 0 AS claimed, 0 AS took_over, v_state AS state, v_fp AS fingerprint,
                IF(v_state = 2, v_outcome, NULL) AS outcome,
                IF(v_state = 2, 0, TIMESTAMPDIFF(MICROSECOND, v_now, v_lease_until)) AS lease_us,
                IF(v_state = 2, TIMESTAMPDIFF(MICROSECOND, v_now, v_expires), 0) AS expire_us,
                CASE v_state WHEN 1 THEN TIMESTAMPDIFF(MICROSECOND, v_created, v_now)
                    WHEN 3 THEN TIMESTAMPDIFF(MICROSECOND, v_held_at, v_now) ELSE 0 END AS age_us,
                IF(v_state = 3, TIMESTAMPDIFF(MICROSECOND, v_now, v_hold_until), 0) AS hold_us,
                v_code AS held_code, v_message AS held_message;
            LEAVE attempts;
        END IF;
        -- Absent, expired, or a lapsed lease or ended hold to take over.
        SET v_new_lease = COALESCE(v_now + INTERVAL p_lease_us MICROSECOND, '9999-12-31 23:59:59.999999');
        SET v_new_expires = GREATEST(v_new_lease,
            COALESCE(v_now + INTERVAL p_retention_us MICROSECOND, '9999-12-31 23:59:59.999999'));
        IF NOT v_found THEN
            INSERT IGNORE INTO `once_records`
                (scope, `key`, fingerprint, state, owner, lease_until, created_at, expires_at)
            VALUES (p_scope, p_key, p_fp, 1, p_owner, v_new_lease, v_now, v_new_expires);
            SET v_rows = ROW_COUNT();
        ELSE
            UPDATE `once_records` SET
                fingerprint = IF(v_expires > v_now AND LENGTH(p_fp) = 0, v_fp, p_fp),
                state = 1,
                owner = p_owner,
                lease_until = v_new_lease,
                outcome = NULL,
                resolved = FALSE,
                revision = v_rev + 1,
                created_at = v_now,
                completed_at = NULL,
                expires_at = v_new_expires,
                held_at = NULL, hold_until = NULL, held_code = NULL, held_message = NULL
            WHERE scope = p_scope AND `key` = p_key
                AND revision = v_rev AND state = v_state
                AND expires_at = v_expires AND owner <=> v_owner;
            SET v_rows = ROW_COUNT();
        END IF;
        IF v_rows = 1 THEN
            SELECT 1 AS claimed, v_found AND v_expires > v_now AS took_over, 1 AS state,
                NULL AS fingerprint, NULL AS outcome, 0 AS lease_us,
                0 AS expire_us, 0 AS age_us, 0 AS hold_us, NULL AS held_code, NULL AS held_message;
            LEAVE attempts;
        END IF;
        SET v_attempt = v_attempt + 1;
        IF v_attempt >= 4 THEN
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'once: key changed concurrently on every attempt';
        END IF;
    END LOOP;
    SET SESSION innodb_lock_wait_timeout = v_saved_wait;
END;
-- once:statement
DROP PROCEDURE IF EXISTS `once_records_resolve`;
-- once:statement
-- once_records_resolve: Resolve in one CALL (see 001), aware of held
-- records. It returns (resolved, state, fingerprint, outcome, lease_us,
-- expire_us, age_us, hold_us, held_code, held_message) as the claim
-- does. A held record is resolved like a pending one, except while a
-- reconciler's lease of another token than p_owner is live: it is then
-- reported.
CREATE PROCEDURE `once_records_resolve`(
    IN p_scope VARBINARY(255), IN p_key VARBINARY(255), IN p_fp VARBINARY(64),
    IN p_outcome LONGBLOB, IN p_owner VARBINARY(255), IN p_retention_us BIGINT,
    IN p_lock_wait_s INT)
    MODIFIES SQL DATA
    SQL SECURITY INVOKER
BEGIN
    DECLARE v_found BOOLEAN DEFAULT TRUE;
    DECLARE v_now, v_lease_until, v_expires, v_new_expires DATETIME(6);
    DECLARE v_created, v_held_at, v_hold_until DATETIME(6);
    DECLARE v_state TINYINT;
    DECLARE v_fp VARBINARY(64);
    DECLARE v_owner VARBINARY(255);
    DECLARE v_outcome LONGBLOB;
    DECLARE v_code VARBINARY(64);
    DECLARE v_message VARBINARY(512);
    DECLARE v_rev BIGINT UNSIGNED;
    DECLARE v_resolved BOOLEAN;
    DECLARE v_rows, v_attempt INT DEFAULT 0;
    DECLARE v_saved_wait BIGINT DEFAULT @@SESSION.innodb_lock_wait_timeout;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
    DECLARE EXIT HANDLER FOR 1205
    BEGIN
        SET SESSION innodb_lock_wait_timeout = v_saved_wait;
        SELECT 0 AS resolved, 0 AS state, NULL AS fingerprint, NULL AS outcome, 0 AS lease_us,
            0 AS expire_us, 0 AS age_us, 0 AS hold_us, NULL AS held_code, NULL AS held_message;
    END;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        SET SESSION innodb_lock_wait_timeout = v_saved_wait;
        RESIGNAL;
    END;
    IF p_lock_wait_s > 0 THEN
        SET SESSION innodb_lock_wait_timeout = p_lock_wait_s;
    END IF;
    attempts: LOOP
        SET v_found = TRUE;
        IF v_attempt = 0 THEN
            SELECT state, fingerprint, owner, lease_until, outcome, expires_at, revision, resolved,
                created_at, held_at, hold_until, held_code, held_message
              INTO v_state, v_fp, v_owner, v_lease_until, v_outcome, v_expires, v_rev, v_resolved,
                v_created, v_held_at, v_hold_until, v_code, v_message
              FROM `once_records` WHERE scope = p_scope AND `key` = p_key;
        ELSE
            SELECT state, fingerprint, owner, lease_until, outcome, expires_at, revision, resolved,
                created_at, held_at, hold_until, held_code, held_message
              INTO v_state, v_fp, v_owner, v_lease_until, v_outcome, v_expires, v_rev, v_resolved,
                v_created, v_held_at, v_hold_until, v_code, v_message
              FROM `once_records` WHERE scope = p_scope AND `key` = p_key
              LOCK IN SHARE MODE;
        END IF;
        SET v_now = UTC_TIMESTAMP(6);
        IF v_found AND v_expires > v_now AND v_state = 2 THEN
            IF v_resolved AND LENGTH(p_owner) > 0 AND v_owner = p_owner AND v_outcome = p_outcome THEN
                -- A re-send of a Resolve that applied (its reply was lost).
                SELECT 1 AS resolved, 2 AS state, NULL AS fingerprint, NULL AS outcome, 0 AS lease_us,
                    0 AS expire_us, 0 AS age_us, 0 AS hold_us, NULL AS held_code, NULL AS held_message;
            ELSE
                SELECT 0 AS resolved, v_state AS state, v_fp AS fingerprint, v_outcome AS outcome, 0 AS lease_us,
                    TIMESTAMPDIFF(MICROSECOND, v_now, v_expires) AS expire_us, 0 AS age_us, 0 AS hold_us,
                    NULL AS held_code, NULL AS held_message;
            END IF;
            LEAVE attempts;
        ELSEIF v_found AND v_expires > v_now
            AND (NOT (LENGTH(p_fp) = 0 OR LENGTH(v_fp) = 0 OR v_fp = p_fp)
                OR (v_state = 3 AND v_lease_until > v_now AND NOT (v_owner <=> p_owner))) THEN
            -- A pending or held record of another payload, or a held record
            -- another reconciler has leased.
            SELECT 0 AS resolved, v_state AS state, v_fp AS fingerprint, NULL AS outcome,
                TIMESTAMPDIFF(MICROSECOND, v_now, v_lease_until) AS lease_us, 0 AS expire_us,
                IF(v_state = 3, TIMESTAMPDIFF(MICROSECOND, v_held_at, v_now),
                    TIMESTAMPDIFF(MICROSECOND, v_created, v_now)) AS age_us,
                IF(v_state = 3, TIMESTAMPDIFF(MICROSECOND, v_now, v_hold_until), 0) AS hold_us,
                v_code AS held_code, v_message AS held_message;
            LEAVE attempts;
        END IF;
        SET v_new_expires = COALESCE(v_now + INTERVAL p_retention_us MICROSECOND, '9999-12-31 23:59:59.999999');
        IF NOT v_found THEN
            INSERT IGNORE INTO `once_records`
                (scope, `key`, fingerprint, state, owner, outcome, resolved, created_at, completed_at, expires_at)
            VALUES (p_scope, p_key, p_fp, 2, p_owner, p_outcome, TRUE, v_now, v_now, v_new_expires);
            SET v_rows = ROW_COUNT();
        ELSE
            UPDATE `once_records` SET
                fingerprint = IF(v_expires > v_now AND LENGTH(p_fp) = 0, v_fp, p_fp),
                state = 2,
                owner = p_owner,
                lease_until = NULL,
                outcome = p_outcome,
                resolved = TRUE,
                revision = v_rev + 1,
                created_at = IF(v_expires <= v_now, v_now, created_at),
                completed_at = v_now,
                expires_at = v_new_expires,
                held_at = NULL, hold_until = NULL, held_code = NULL, held_message = NULL
            WHERE scope = p_scope AND `key` = p_key
                AND revision = v_rev AND state = v_state
                AND expires_at = v_expires AND owner <=> v_owner;
            SET v_rows = ROW_COUNT();
        END IF;
        IF v_rows = 1 THEN
            SELECT 1 AS resolved, 2 AS state, NULL AS fingerprint, NULL AS outcome, 0 AS lease_us,
                0 AS expire_us, 0 AS age_us, 0 AS hold_us, NULL AS held_code, NULL AS held_message;
            LEAVE attempts;
        END IF;
        SET v_attempt = v_attempt + 1;
        IF v_attempt >= 4 THEN
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'once: key changed concurrently on every attempt';
        END IF;
    END LOOP;
    SET SESSION innodb_lock_wait_timeout = v_saved_wait;
END;

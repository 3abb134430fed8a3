-- once: back to schema 001. Held rows become pending rows whose lease has
-- lapsed (the next matching call takes them over); the index on
-- (state, expires_at) becomes the index on expires_at again; the CHECK on
-- state is added back (InnoDB copies the table for it); the procedures
-- are 001's again.
UPDATE `once_records` SET state = 1 WHERE state = 3;
-- once:statement
ALTER TABLE `once_records`
    ADD INDEX /*M! IF NOT EXISTS */ `once_records_expires_at_idx` (expires_at),
    DROP INDEX /*M! IF EXISTS */ `once_records_state_idx`;
-- once:statement
ALTER TABLE `once_records`
    DROP COLUMN /*M! IF EXISTS */ held_at,
    DROP COLUMN /*M! IF EXISTS */ hold_until,
    DROP COLUMN /*M! IF EXISTS */ held_code,
    DROP COLUMN /*M! IF EXISTS */ held_message,
    ADD CONSTRAINT /*M! CONSTRAINT_1 */ /*!80016 `once_records_chk_1` */ CHECK (state IN (1, 2));
-- once:statement
-- 003's implementation, left by 003's down migration.
DROP PROCEDURE IF EXISTS `once_records_call_v2`;
-- once:statement
DROP PROCEDURE IF EXISTS `once_records_claim`;
-- once:statement
-- once_records_claim: Claim in one CALL. It returns one row:
-- (claimed, took_over, state, fingerprint, outcome, lease_us), where state
-- 0 means the wait for a concurrent uncommitted claim of the key exceeded
-- p_lock_wait_s seconds (0: keep the session's innodb_lock_wait_timeout).
--
-- The first read is a consistent read: no row lock, no write, so a replay
-- or an in-progress answer costs a plain primary-key read. At most one
-- write follows: an INSERT IGNORE when no row was seen, or, when the row
-- was seen expired or pending with a lapsed lease and a matching
-- fingerprint, an UPDATE conditioned on the very row version that was read
-- (revision, state, expiry, owner). A pending record already owned by
-- p_owner is a re-send of a Claim whose reply was lost: claimed, and
-- nothing changes. When that write changes nothing, a
-- concurrent session changed the key in between; the procedure reads again
-- with LOCK IN SHARE MODE, which sees the latest committed version even
-- inside a REPEATABLE READ transaction, and decides again, at most four
-- times.
CREATE PROCEDURE `once_records_claim`(
    IN p_scope VARBINARY(255), IN p_key VARBINARY(255), IN p_fp VARBINARY(64),
    IN p_owner VARBINARY(255), IN p_lease_us BIGINT, IN p_retention_us BIGINT,
    IN p_lock_wait_s INT)
    MODIFIES SQL DATA
    SQL SECURITY INVOKER
BEGIN
    DECLARE v_found BOOLEAN DEFAULT TRUE;
    DECLARE v_now, v_lease_until, v_expires, v_new_lease, v_new_expires DATETIME(6);
    DECLARE v_state TINYINT;
    DECLARE v_fp VARBINARY(64);
    DECLARE v_owner VARBINARY(255);
    DECLARE v_outcome LONGBLOB;
    DECLARE v_rev BIGINT UNSIGNED;
    DECLARE v_rows, v_attempt INT DEFAULT 0;
    DECLARE v_saved_wait BIGINT DEFAULT @@SESSION.innodb_lock_wait_timeout;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
    DECLARE EXIT HANDLER FOR 1205
    BEGIN
        SET SESSION innodb_lock_wait_timeout = v_saved_wait;
        SELECT 0 AS claimed, 0 AS took_over, 0 AS state, NULL AS fingerprint, NULL AS outcome, 0 AS lease_us;
    END;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        SET SESSION innodb_lock_wait_timeout = v_saved_wait;
        RESIGNAL;
    END;
    -- Every locking statement below (the writes and the re-reads LOCK IN
    -- SHARE MODE) waits at most p_lock_wait_s for a concurrent uncommitted
    -- claim; the handlers and the end restore the session's value.
    IF p_lock_wait_s > 0 THEN
        SET SESSION innodb_lock_wait_timeout = p_lock_wait_s;
    END IF;
    attempts: LOOP
        SET v_found = TRUE;
        IF v_attempt = 0 THEN
            SELECT state, fingerprint, owner, lease_until, outcome, expires_at, revision
              INTO v_state, v_fp, v_owner, v_lease_until, v_outcome, v_expires, v_rev
              FROM `once_records` WHERE scope = p_scope AND `key` = p_key;
        ELSE
            SELECT state, fingerprint, owner, lease_until, outcome, expires_at, revision
              INTO v_state, v_fp, v_owner, v_lease_until, v_outcome, v_expires, v_rev
              FROM `once_records` WHERE scope = p_scope AND `key` = p_key
              LOCK IN SHARE MODE;
        END IF;
        SET v_now = UTC_TIMESTAMP(6);
        IF v_found AND v_expires > v_now AND v_state = 1 AND v_owner = p_owner THEN
            -- A re-send of a Claim that applied (its reply was lost).
            SELECT 1 AS claimed, 0 AS took_over, 1 AS state, NULL AS fingerprint, NULL AS outcome, 0 AS lease_us;
            LEAVE attempts;
        ELSEIF v_found AND v_expires > v_now
            AND NOT (v_state = 1 AND v_lease_until <= v_now
                AND (LENGTH(p_fp) = 0 OR LENGTH(v_fp) = 0 OR v_fp = p_fp)) THEN
            -- A live record that stays: a replay, a duplicate in progress or
            -- a mismatch. No lock, no write.
            SELECT 0 AS claimed, 0 AS took_over, v_state AS state, v_fp AS fingerprint,
                IF(v_state = 2, v_outcome, NULL) AS outcome,
                IF(v_state = 1, TIMESTAMPDIFF(MICROSECOND, v_now, v_lease_until), 0) AS lease_us;
            LEAVE attempts;
        END IF;
        -- Absent, expired, or a lapsed lease to take over: one write.
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
                expires_at = v_new_expires
            WHERE scope = p_scope AND `key` = p_key
                AND revision = v_rev AND state = v_state
                AND expires_at = v_expires AND owner <=> v_owner;
            SET v_rows = ROW_COUNT();
        END IF;
        IF v_rows = 1 THEN
            SELECT 1 AS claimed, v_found AND v_expires > v_now AS took_over, 1 AS state,
                NULL AS fingerprint, NULL AS outcome, 0 AS lease_us;
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
-- once_records_resolve: Resolve in one CALL, built like the claim. It
-- returns (resolved, state, fingerprint, outcome, lease_us), state 0 as in
-- the claim. It stores the outcome, with p_owner as the completed record's
-- owner, when the key is absent or expired, or pending (whoever owns it)
-- with a matching fingerprint (an empty one on either side matches; the
-- record keeps the stored one when p_fp is empty). It never overwrites a
-- completed record, but reports a record that a Resolve with this very
-- (non-empty) owner token completed with this very outcome as resolved
-- again: a re-send after a lost reply.
CREATE PROCEDURE `once_records_resolve`(
    IN p_scope VARBINARY(255), IN p_key VARBINARY(255), IN p_fp VARBINARY(64),
    IN p_outcome LONGBLOB, IN p_owner VARBINARY(255), IN p_retention_us BIGINT,
    IN p_lock_wait_s INT)
    MODIFIES SQL DATA
    SQL SECURITY INVOKER
BEGIN
    DECLARE v_found BOOLEAN DEFAULT TRUE;
    DECLARE v_now, v_lease_until, v_expires, v_new_expires DATETIME(6);
    DECLARE v_state TINYINT;
    DECLARE v_fp VARBINARY(64);
    DECLARE v_owner VARBINARY(255);
    DECLARE v_outcome LONGBLOB;
    DECLARE v_rev BIGINT UNSIGNED;
    DECLARE v_resolved BOOLEAN;
    DECLARE v_rows, v_attempt INT DEFAULT 0;
    DECLARE v_saved_wait BIGINT DEFAULT @@SESSION.innodb_lock_wait_timeout;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
    DECLARE EXIT HANDLER FOR 1205
    BEGIN
        SET SESSION innodb_lock_wait_timeout = v_saved_wait;
        SELECT 0 AS resolved, 0 AS state, NULL AS fingerprint, NULL AS outcome, 0 AS lease_us;
    END;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        SET SESSION innodb_lock_wait_timeout = v_saved_wait;
        RESIGNAL;
    END;
    -- Every locking statement below (the writes and the re-reads LOCK IN
    -- SHARE MODE) waits at most p_lock_wait_s for a concurrent uncommitted
    -- claim; the handlers and the end restore the session's value.
    IF p_lock_wait_s > 0 THEN
        SET SESSION innodb_lock_wait_timeout = p_lock_wait_s;
    END IF;
    attempts: LOOP
        SET v_found = TRUE;
        IF v_attempt = 0 THEN
            SELECT state, fingerprint, owner, lease_until, outcome, expires_at, revision, resolved
              INTO v_state, v_fp, v_owner, v_lease_until, v_outcome, v_expires, v_rev, v_resolved
              FROM `once_records` WHERE scope = p_scope AND `key` = p_key;
        ELSE
            SELECT state, fingerprint, owner, lease_until, outcome, expires_at, revision, resolved
              INTO v_state, v_fp, v_owner, v_lease_until, v_outcome, v_expires, v_rev, v_resolved
              FROM `once_records` WHERE scope = p_scope AND `key` = p_key
              LOCK IN SHARE MODE;
        END IF;
        SET v_now = UTC_TIMESTAMP(6);
        IF v_found AND v_expires > v_now AND v_state = 2 THEN
            IF v_resolved AND LENGTH(p_owner) > 0 AND v_owner = p_owner AND v_outcome = p_outcome THEN
                -- A re-send of a Resolve that applied (its reply was lost).
                SELECT 1 AS resolved, 2 AS state, NULL AS fingerprint, NULL AS outcome, 0 AS lease_us;
            ELSE
                SELECT 0 AS resolved, v_state AS state, v_fp AS fingerprint, v_outcome AS outcome, 0 AS lease_us;
            END IF;
            LEAVE attempts;
        ELSEIF v_found AND v_expires > v_now
            AND NOT (LENGTH(p_fp) = 0 OR LENGTH(v_fp) = 0 OR v_fp = p_fp) THEN
            -- A pending record of another payload.
            SELECT 0 AS resolved, v_state AS state, v_fp AS fingerprint, NULL AS outcome,
                TIMESTAMPDIFF(MICROSECOND, v_now, v_lease_until) AS lease_us;
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
                expires_at = v_new_expires
            WHERE scope = p_scope AND `key` = p_key
                AND revision = v_rev AND state = v_state
                AND expires_at = v_expires AND owner <=> v_owner;
            SET v_rows = ROW_COUNT();
        END IF;
        IF v_rows = 1 THEN
            SELECT 1 AS resolved, 2 AS state, NULL AS fingerprint, NULL AS outcome, 0 AS lease_us;
            LEAVE attempts;
        END IF;
        SET v_attempt = v_attempt + 1;
        IF v_attempt >= 4 THEN
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'once: key changed concurrently on every attempt';
        END IF;
    END LOOP;
    SET SESSION innodb_lock_wait_timeout = v_saved_wait;
END;

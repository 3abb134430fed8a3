-- once: a Resolve fenced by a reconciler's lease (ResolveParams.OnlyLeased).
--
-- `once_records_call_v4` is `once_records_call_v3` (004) with one more
-- parameter, p_only_leased: when true, a Resolve (p_state 2) writes only a
-- live held record whose owner is p_owner (non-empty), the token that
-- leased it (its lease may have lapsed), with a matching fingerprint, and
-- leaves every other record as it is and reports it: an absent or expired
-- key as state -1, written nothing. It is decided in the same
-- read-then-fenced-write loop as every other answer, so a takeover
-- committed after the first read is found by the re-read and refused.
-- Under 003's rule a changed parameter list is a new name: v2 and v3 stay
-- as they are, and the code calls v4 only for a Resolve with OnlyLeased
-- (a Reconciler's), so the code runs on schema 004 as long as it sends no
-- such Resolve. No table change.
DROP PROCEDURE IF EXISTS `once_records_call_v4`;
-- once:statement
CREATE PROCEDURE `once_records_call_v4`(
    IN p_state TINYINT, IN p_scope VARBINARY(255), IN p_key VARBINARY(255), IN p_fp VARBINARY(64),
    IN p_owner VARBINARY(255), IN p_outcome LONGBLOB, IN p_lease_us BIGINT, IN p_retention_us BIGINT,
    IN p_lock_wait_s INT, IN p_shape TINYINT, IN p_refuse_live BOOLEAN, IN p_only_leased BOOLEAN)
    MODIFIES SQL DATA
    SQL SECURITY INVOKER
BEGIN
    DECLARE v_claim BOOLEAN DEFAULT p_state = 1;
    DECLARE v_found, v_live BOOLEAN DEFAULT TRUE;
    DECLARE v_now, v_lease_until, v_expires, v_new_lease, v_new_expires DATETIME(6);
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
    -- The answer: done (claimed or resolved), took_over, the state reported
    -- (0: the wait for a concurrent uncommitted claim exceeded
    -- p_lock_wait_s seconds), and the reported record's columns.
    DECLARE r_done, r_took_over BOOLEAN DEFAULT FALSE;
    DECLARE r_state TINYINT DEFAULT 0;
    DECLARE r_fp VARBINARY(64);
    DECLARE r_outcome LONGBLOB;
    DECLARE r_lease, r_expire, r_age, r_hold BIGINT DEFAULT 0;
    DECLARE r_code VARBINARY(64);
    DECLARE r_message VARBINARY(512);
    work: BEGIN
        DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
        DECLARE EXIT HANDLER FOR 1205 SET r_done = FALSE, r_took_over = FALSE, r_state = 0;
        DECLARE EXIT HANDLER FOR SQLEXCEPTION
        BEGIN
            SET SESSION innodb_lock_wait_timeout = v_saved_wait;
            RESIGNAL;
        END;
        -- Every locking statement below (the writes and the re-reads LOCK IN
        -- SHARE MODE) waits at most p_lock_wait_s; the session's value is
        -- restored on every exit.
        IF p_lock_wait_s > 0 THEN
            SET SESSION innodb_lock_wait_timeout = p_lock_wait_s;
        END IF;
        -- The first read is a consistent read: no lock, no write. At most
        -- one write follows, conditioned on the very row version read; when
        -- it changes nothing, a concurrent session changed the key, and the
        -- key is read again LOCK IN SHARE MODE (the latest committed version,
        -- even in a REPEATABLE READ transaction), at most four times.
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
            SET v_live = v_found AND v_expires > v_now;
            IF v_live AND IF(v_claim, v_state = 1 AND v_owner = p_owner,
                v_state = 2 AND v_resolved AND LENGTH(p_owner) > 0 AND v_owner = p_owner AND v_outcome = p_outcome) THEN
                -- A re-send of a Claim or a Resolve that applied (its reply
                -- was lost): done, nothing changes.
                SET r_done = TRUE, r_state = p_state;
                LEAVE attempts;
            ELSEIF v_live AND (v_state = 2 OR NOT (LENGTH(p_fp) = 0 OR LENGTH(v_fp) = 0 OR v_fp = p_fp)
                OR IF(v_claim, v_lease_until > v_now OR (v_state = 3 AND v_hold_until > v_now),
                    v_state = 3 AND v_lease_until > v_now AND NOT (v_owner <=> p_owner)
                    OR p_refuse_live AND v_state = 1 AND v_lease_until > v_now
                    OR p_only_leased AND NOT (v_state = 3 AND LENGTH(p_owner) > 0 AND v_owner = p_owner))) THEN
                -- A live record that stays: completed, of another payload,
                -- or, for a claim, pending or held with a live lease or hold,
                -- for a Resolve, held under another reconciler's live lease,
                -- or (p_refuse_live) pending with a live lease, or
                -- (p_only_leased) anything but a held record p_owner leased.
                -- No lock, no write.
                SET r_state = v_state, r_fp = v_fp,
                    r_outcome = IF(v_state = 2, v_outcome, NULL),
                    r_lease = IF(v_state = 2, 0, TIMESTAMPDIFF(MICROSECOND, v_now, v_lease_until)),
                    r_expire = IF(v_state = 2, TIMESTAMPDIFF(MICROSECOND, v_now, v_expires), 0),
                    r_age = CASE v_state WHEN 1 THEN TIMESTAMPDIFF(MICROSECOND, v_created, v_now)
                        WHEN 3 THEN TIMESTAMPDIFF(MICROSECOND, v_held_at, v_now) ELSE 0 END,
                    r_hold = IF(v_state = 3, TIMESTAMPDIFF(MICROSECOND, v_now, v_hold_until), 0),
                    r_code = IF(v_state = 3, v_code, NULL), r_message = IF(v_state = 3, v_message, NULL);
                LEAVE attempts;
            END IF;
            IF p_only_leased AND NOT v_live THEN
                -- (p_only_leased) Absent or expired: the next intent's key.
                -- No write; state -1 reports it.
                SET r_state = -1;
                LEAVE attempts;
            END IF;
            -- Absent, expired, a lapsed lease or ended hold to take over, or
            -- (Resolve) a pending or held record to complete: one write,
            -- which clears the held columns.
            SET v_new_lease = IF(v_claim, COALESCE(v_now + INTERVAL p_lease_us MICROSECOND, '9999-12-31 23:59:59.999999'), NULL);
            SET v_new_expires = GREATEST(COALESCE(v_new_lease, v_now),
                COALESCE(v_now + INTERVAL p_retention_us MICROSECOND, '9999-12-31 23:59:59.999999'));
            IF NOT v_found THEN
                INSERT IGNORE INTO `once_records`
                    (scope, `key`, fingerprint, state, owner, lease_until, outcome, resolved,
                     created_at, completed_at, expires_at)
                VALUES (p_scope, p_key, p_fp, p_state, p_owner, v_new_lease, IF(v_claim, NULL, p_outcome), NOT v_claim,
                    v_now, IF(v_claim, NULL, v_now), v_new_expires);
                SET v_rows = ROW_COUNT();
            ELSE
                UPDATE `once_records` SET
                    fingerprint = IF(v_expires > v_now AND LENGTH(p_fp) = 0, v_fp, p_fp),
                    state = p_state,
                    owner = p_owner,
                    lease_until = v_new_lease,
                    outcome = IF(v_claim, NULL, p_outcome),
                    resolved = NOT v_claim,
                    revision = v_rev + 1,
                    created_at = IF(v_claim OR v_expires <= v_now, v_now, created_at),
                    completed_at = IF(v_claim, NULL, v_now),
                    expires_at = v_new_expires,
                    held_at = NULL, hold_until = NULL, held_code = NULL, held_message = NULL
                WHERE scope = p_scope AND `key` = p_key
                    AND revision = v_rev AND state = v_state
                    AND expires_at = v_expires AND owner <=> v_owner;
                SET v_rows = ROW_COUNT();
            END IF;
            IF v_rows = 1 THEN
                SET r_done = TRUE, r_took_over = v_claim AND v_live, r_state = p_state;
                LEAVE attempts;
            END IF;
            SET v_attempt = v_attempt + 1;
            IF v_attempt >= 4 THEN
                SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'once: key changed concurrently on every attempt';
            END IF;
        END LOOP;
    END work;
    SET SESSION innodb_lock_wait_timeout = v_saved_wait;
    IF p_shape = 2 AND v_claim THEN
        -- 002's claim row.
        SELECT r_done AS claimed, r_took_over AS took_over, r_state AS state, r_fp AS fingerprint,
            r_outcome AS outcome, r_lease AS lease_us, r_expire AS expire_us, r_age AS age_us,
            r_hold AS hold_us, r_code AS held_code, r_message AS held_message;
    ELSEIF p_shape = 2 THEN
        -- 002's resolve row.
        SELECT r_done AS resolved, r_state AS state, r_fp AS fingerprint, r_outcome AS outcome,
            r_lease AS lease_us, r_expire AS expire_us, r_age AS age_us, r_hold AS hold_us,
            r_code AS held_code, r_message AS held_message;
    ELSE
        -- 001's rows, which know no held state: a held record is pending
        -- until the later of its hold and its lease.
        IF r_state = 3 THEN
            SET r_state = 1, r_lease = GREATEST(r_lease, r_hold);
        END IF;
        IF v_claim THEN
            SELECT r_done AS claimed, r_took_over AS took_over, r_state AS state,
                r_fp AS fingerprint, r_outcome AS outcome, r_lease AS lease_us;
        ELSE
            SELECT r_done AS resolved, r_state AS state, r_fp AS fingerprint, r_outcome AS outcome, r_lease AS lease_us;
        END IF;
    END IF;
END;

-- once: the records table, one row per (scope, key), and the stored
-- procedure that makes Claim and Resolve one round trip each.
--
-- The names below are the defaults. mysqlstore's Migrate substitutes the
-- table of its Config for `once_records` (and the derived names
-- `once_records_state_idx` and `once_records_call_v1`). Statements are
-- separated by "-- once:statement" lines; a tool that sends the whole file
-- at once (golang-migrate with multiStatements=true) may ignore them: no
-- DELIMITER is needed, the server parses a procedure body itself.
--
-- scope, key, fingerprint and owner are VARBINARY: compared byte for byte,
-- with no collation that would make "A" equal "a" or "a" equal "a ".
-- Times are DATETIME(6) in UTC, always from the server's UTC_TIMESTAMP(6).
-- resolved tells a record completed by Resolve (whose owner is the Resolve's
-- token) from one completed by its claim's owner.
-- revision grows on every write, so that an UPDATE always changes its row
-- (its affected-rows count is then the same with or without the client's
-- CLIENT_FOUND_ROWS flag) and so that a takeover can be conditioned on the
-- exact row it read.
--
-- steps is the record's checkpoints (an opaque blob that Checkpoint
-- writes), NULL when it has none. Every other write keeps it, except one
-- that replaces an expired record, which clears it. A claim returns it on
-- a takeover and on a re-send; it reads it through a scalar subquery that
-- runs only on a pending or held row, so that a replay never reads its
-- pages.
--
-- State 1 is pending, 2 completed, 3 held. held_at, hold_until, held_code
-- and held_message describe a held record: since when and until when it
-- is held, and the held error's code and message for operators. A held
-- record's owner and lease_until are a reconciler's token and lease
-- (lease_until is the hold's start until one leases it). A pending
-- record's age is created_at, which every claim and takeover sets.
--
-- The one secondary index is on (state, expires_at). The hot path writes
-- it once per record: a claim inserts one entry, a completion changes
-- state together with expires_at, a renewal moves it only when it moves
-- expires_at, a release or a sweep deletes it. With state leading, the
-- held rows are one contiguous range of the index (its size is the number
-- of held keys), and so are the pending rows: listing reads either range
-- from its cursor, never the completed rows, and Sweep reads the expired
-- part of each state's range. (An index on held_at alone, NULL except on
-- held rows, would be one more entry inserted by every claim and deleted
-- by every sweep: InnoDB indexes NULLs, and has no partial index.)
CREATE TABLE IF NOT EXISTS `once_records` (
    scope        VARBINARY(255)  NOT NULL,
    `key`        VARBINARY(255)  NOT NULL,
    fingerprint  VARBINARY(64)   NOT NULL DEFAULT '',
    state        TINYINT         NOT NULL,
    owner        VARBINARY(255)  NULL,
    lease_until  DATETIME(6)     NULL,
    outcome      LONGBLOB        NULL,
    steps        LONGBLOB        NULL,
    resolved     BOOLEAN         NOT NULL DEFAULT FALSE,
    revision     BIGINT UNSIGNED NOT NULL DEFAULT 1,
    created_at   DATETIME(6)     NOT NULL,
    completed_at DATETIME(6)     NULL,
    expires_at   DATETIME(6)     NOT NULL,
    held_at      DATETIME(6)     NULL,
    hold_until   DATETIME(6)     NULL,
    held_code    VARBINARY(64)   NULL,
    held_message VARBINARY(512)  NULL,
    PRIMARY KEY (scope, `key`),
    KEY `once_records_state_idx` (state, expires_at),
    CHECK (state = 2 OR (owner IS NOT NULL AND lease_until IS NOT NULL))
) ENGINE=InnoDB;
-- once:statement
DROP PROCEDURE IF EXISTS `once_records_call_v1`;
-- once:statement
-- `once_records_call_v1` is the one implementation of Claim and Resolve.
-- p_state is what the call writes: 1 claims the key (a pending record), 2
-- resolves it (a completed record with p_outcome). It returns one row: for
-- a claim (claimed, took_over, steps, state, fingerprint, outcome,
-- lease_us, expire_us, age_us, hold_us, held_code, held_message), for a
-- Resolve the same with resolved first and no took_over nor steps. steps
-- is the claimed record's checkpoints on a takeover or a re-send, NULL
-- otherwise. State 0 means the wait for a
-- concurrent uncommitted claim of the key exceeded p_lock_wait_s seconds
-- (0: keep the session's innodb_lock_wait_timeout); expire_us is a
-- completed record's time left, age_us a pending record's time since its
-- claim and a held one's since its hold, and hold_us a held record's hold
-- left.
--
-- A claim takes the key when it is absent or expired, or pending with a
-- lapsed lease, or held with its hold and any reconciler's lease ended,
-- and the fingerprints match (an empty one on either side matches; the
-- record keeps the stored one when p_fp is empty); a pending record
-- already owned by p_owner is a re-send of a Claim whose reply was lost:
-- claimed, and nothing changes. Either keeps the record's checkpoints
-- (steps); a claim of an absent or expired key starts with none. A Resolve stores its outcome, with p_owner
-- as the completed record's owner, when the key is absent or expired, or
-- pending with a lapsed lease, or held, with a matching fingerprint,
-- except while a reconciler's lease of another token than p_owner is live
-- on a held record. With p_only_leased it writes only a live held record
-- that p_owner (non-empty) leased (a lease_until after held_at: the hold
-- sets it to held_at, a lease beyond it), reporting an absent or expired
-- key as state -1, written nothing. It never overwrites a completed record, but reports a record
-- that a Resolve with this very (non-empty) owner token completed with
-- this very outcome as resolved again: a re-send after a lost reply.
CREATE PROCEDURE `once_records_call_v1`(
    IN p_state TINYINT, IN p_scope VARBINARY(255), IN p_key VARBINARY(255), IN p_fp VARBINARY(64),
    IN p_owner VARBINARY(255), IN p_outcome LONGBLOB, IN p_lease_us BIGINT, IN p_retention_us BIGINT,
    IN p_lock_wait_s INT, IN p_only_leased BOOLEAN)
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
    DECLARE v_outcome, v_steps LONGBLOB;
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
    DECLARE r_outcome, r_steps LONGBLOB;
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
        -- even in a REPEATABLE READ transaction), at most four times. A
        -- claim reads the checkpoints of a pending or held row, in the same
        -- read (a subquery that runs only then), so that they are those of
        -- the very row version that a takeover's write is conditioned on.
        attempts: LOOP
            SET v_found = TRUE, v_steps = NULL;
            IF v_attempt = 0 THEN
                SELECT state, fingerprint, owner, lease_until, outcome, expires_at, revision, resolved,
                    created_at, held_at, hold_until, held_code, held_message,
                    IF(v_claim AND state <> 2, (SELECT s.steps FROM `once_records` AS s
                        WHERE s.scope = p_scope AND s.`key` = p_key), NULL)
                  INTO v_state, v_fp, v_owner, v_lease_until, v_outcome, v_expires, v_rev, v_resolved,
                    v_created, v_held_at, v_hold_until, v_code, v_message, v_steps
                  FROM `once_records` WHERE scope = p_scope AND `key` = p_key;
            ELSE
                SELECT state, fingerprint, owner, lease_until, outcome, expires_at, revision, resolved,
                    created_at, held_at, hold_until, held_code, held_message,
                    IF(v_claim AND state <> 2, (SELECT s.steps FROM `once_records` AS s
                        WHERE s.scope = p_scope AND s.`key` = p_key LOCK IN SHARE MODE), NULL)
                  INTO v_state, v_fp, v_owner, v_lease_until, v_outcome, v_expires, v_rev, v_resolved,
                    v_created, v_held_at, v_hold_until, v_code, v_message, v_steps
                  FROM `once_records` WHERE scope = p_scope AND `key` = p_key
                  LOCK IN SHARE MODE;
            END IF;
            SET v_now = UTC_TIMESTAMP(6);
            SET v_live = v_found AND v_expires > v_now;
            IF v_live AND IF(v_claim, v_state = 1 AND v_owner = p_owner,
                v_state = 2 AND v_resolved AND LENGTH(p_owner) > 0 AND v_owner = p_owner AND v_outcome = p_outcome) THEN
                -- A re-send of a Claim or a Resolve that applied (its reply
                -- was lost): done, nothing changes.
                SET r_done = TRUE, r_state = p_state, r_steps = IF(v_claim, v_steps, NULL);
                LEAVE attempts;
            ELSEIF v_live AND (v_state = 2 OR NOT (LENGTH(p_fp) = 0 OR LENGTH(v_fp) = 0 OR v_fp = p_fp)
                OR IF(v_claim, v_lease_until > v_now OR (v_state = 3 AND v_hold_until > v_now),
                    v_state = 3 AND v_lease_until > v_now AND NOT (v_owner <=> p_owner)
                    OR v_state = 1 AND v_lease_until > v_now
                    OR p_only_leased AND NOT (v_state = 3 AND LENGTH(p_owner) > 0 AND v_owner = p_owner
                        AND v_lease_until > v_held_at))) THEN
                -- A live record that stays: completed, of another payload,
                -- or, for a claim, pending or held with a live lease or hold,
                -- for a Resolve, pending with a live lease, held under
                -- another reconciler's live lease, or (p_only_leased)
                -- anything but a held record p_owner leased.
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
            -- which clears the held columns, and the checkpoints of an
            -- expired record.
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
                    steps = IF(v_live, steps, NULL),
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
                SET r_done = TRUE, r_took_over = v_claim AND v_live, r_state = p_state,
                    r_steps = IF(v_claim AND v_live, v_steps, NULL);
                LEAVE attempts;
            END IF;
            SET v_attempt = v_attempt + 1;
            IF v_attempt >= 4 THEN
                SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'once: key changed concurrently on every attempt';
            END IF;
        END LOOP;
    END work;
    SET SESSION innodb_lock_wait_timeout = v_saved_wait;
    IF v_claim THEN
        SELECT r_done AS claimed, r_took_over AS took_over, r_steps AS steps, r_state AS state, r_fp AS fingerprint,
            r_outcome AS outcome, r_lease AS lease_us, r_expire AS expire_us, r_age AS age_us,
            r_hold AS hold_us, r_code AS held_code, r_message AS held_message;
    ELSE
        SELECT r_done AS resolved, r_state AS state, r_fp AS fingerprint, r_outcome AS outcome,
            r_lease AS lease_us, r_expire AS expire_us, r_age AS age_us, r_hold AS hold_us,
            r_code AS held_code, r_message AS held_message;
    END IF;
END;

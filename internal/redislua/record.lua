-- record.lua: the record layout, prepended to the scripts that
-- decode records (see redislua.go), so that the server side reads and
-- writes records in this one place; the Go side decodes them in
-- redisstore's decodeRecord alone, and writes a new pending record from
-- Claim (encodePending) without a script.
--
-- A record is one string, owner first so that a fenced script finds it at
-- a fixed offset:
--   pending:   'P' len(owner) owner len(fp) fp life-ms ' ' lease-tail-ms
--   completed: 'C' len(owner) owner len(fp) fp retention-ms ' ' outcome
--   held:      'H' len(owner) owner len(fp) fp life-ms ' ' lease-tail-ms
--              ' ' hold-tail-ms ' ' len(code) ' ' code message
-- where len(owner) and len(fp) are one byte, the other numbers canonical
-- decimals. Times are not stored: they are offsets back from the key's
-- expiry (its PX TTL, the server's clock), which the store reads with PTTL
-- in the same atomic step as the value:
--   life       = expiry - when the record was claimed (or held)
--   lease-tail = expiry - the lease end (a held record's: a reconciler's)
--   hold-tail  = expiry - the hold end
-- so with ttl = PTTL, the lease has ttl - lease-tail ms left, the hold
-- ttl - hold-tail, and the record's age is life - ttl. Every tail is >= 0:
-- a record never expires before its lease or its hold ends. A write that
-- moves the expiry by d adds d to every offset it keeps. A completed
-- record keeps the retention it was written with (its PX), an upper bound
-- on its time left that Claim needs (see redisstore's Claim).
--
-- A record's checkpoints (backends.Store.Checkpoint), when it has any, are
-- a second string key, the record's key followed by ":steps" (same Cluster
-- hash tag, so same slot), whose bytes only checkpoint.lua changes; every
-- script that moves the record's expiry gives them the same one (see
-- keep_steps), so they expire with it, and the record's key alone decides
-- every claim, replay and fence. The scripts that may touch them take it
-- as KEYS[2].
--
-- Replies that report a record a script did not change: {record, ttl}.

-- ttl is the key's PTTL, which every record has.
local function ttl(key)
	local t = redis.call('PTTL', key)
	if t < 0 then
		error({err = 'ONCECORRUPT record without expiry'})
	end
	return t
end

-- decode returns {state = 'P', 'C' or 'H', owner, fp, life, lease_tail
-- (pending and held), hold_tail, code and message (held), outcome_at
-- (completed: where the outcome starts)}, or raises an ONCECORRUPT error
-- reply for a value this package did not write.
local function decode(cur)
	local st = string.sub(cur, 1, 1)
	local m = string.byte(cur, 2)
	local n = m and string.byte(cur, 3 + m)
	if (st ~= 'P' and st ~= 'C' and st ~= 'H') or not n or #cur < 3 + m + n then
		error({err = 'ONCECORRUPT record layout'})
	end
	local r = {state = st, owner = string.sub(cur, 3, 2 + m), fp = string.sub(cur, 4 + m, 3 + m + n)}
	local at = 4 + m + n
	if st == 'C' then
		local ret, from = string.match(cur, '^(%d+) ()', at)
		if not from then
			error({err = 'ONCECORRUPT completed record'})
		end
		r.retention, r.outcome_at = tonumber(ret), from
		return r
	end
	local rest = string.sub(cur, at)
	if st == 'P' then
		local life, lease = string.match(rest, '^(%d+) (%d+)$')
		r.life, r.lease_tail = tonumber(life), tonumber(lease)
		if not r.life then
			error({err = 'ONCECORRUPT pending record'})
		end
		return r
	end
	local life, lease, hold, codelen, from = string.match(rest, '^(%d+) (%d+) (%d+) (%d+) ()')
	if not from or #rest < from - 1 + tonumber(codelen) then
		error({err = 'ONCECORRUPT held record'})
	end
	r.life, r.lease_tail, r.hold_tail = tonumber(life), tonumber(lease), tonumber(hold)
	r.code = string.sub(rest, from, from + tonumber(codelen) - 1)
	r.message = string.sub(rest, from + tonumber(codelen))
	return r
end

-- outcome is the outcome of a decoded completed record.
local function outcome(cur, r)
	return string.sub(cur, r.outcome_at)
end

local function head(st, owner, fp)
	return st .. string.char(#owner) .. owner .. string.char(#fp) .. fp
end

local function encode_pending(owner, fp, life, lease_tail)
	return head('P', owner, fp) .. string.format('%d %d', life, lease_tail)
end

local function encode_held(r)
	return head('H', r.owner, r.fp) ..
		string.format('%d %d %d %d ', r.life, r.lease_tail, r.hold_tail, #r.code) .. r.code .. r.message
end

local function encode_completed(owner, fp, retention, outcome)
	return head('C', owner, fp) .. retention .. ' ' .. outcome
end

-- keep_steps gives the checkpoints (KEYS[2]), if any, the record's very
-- expiry (KEYS[1]'s PEXPIRETIME), which the script has just set exp ms
-- from now. With exp of a second or more, PEXPIREAT, whose cost does not
-- grow with the checkpoints' size (rewriting them held the server, which
-- runs one script at a time, for a time that grows with their size, on
-- every renewal and completion): on Redis 7.0 it deletes the key only when
-- the time it is given has already come by the real clock, which would
-- take exp ms between two consecutive commands of one script, and the
-- record would then have expired as well; later servers freeze the clock
-- for the whole script, before that time. A shorter expiry, whose end may
-- come during the script, writes them again with SET PXAT instead, which
-- never deletes on 7.0. Not PEXPIRE: on 7.0 it reads the clock twice, for
-- the new expiry and for its "already expired" check, and PEXPIRE key 1
-- deleted a live record's checkpoints when a millisecond ended in between.
-- Nor a PX of their own: on 7.0 each command reads the clock anew, so two
-- PX in one script may differ.
local function keep_steps(exp)
	local at = redis.call('PEXPIRETIME', KEYS[1])
	if tonumber(exp) >= 1000 then
		redis.call('PEXPIREAT', KEYS[2], at)
		return
	end
	local steps = redis.call('GET', KEYS[2])
	if steps then
		redis.call('SET', KEYS[2], steps, 'PXAT', at)
	end
end

-- set writes v as the record (KEYS[1]), living exp ms from now, and
-- gives its checkpoints (KEYS[2]), if any, that very expiry (see
-- keep_steps); keep says the expiry is unchanged (KEEPTTL), and so is
-- theirs.
local function set(v, exp, keep)
	if keep then
		redis.call('SET', KEYS[1], v, 'KEEPTTL')
		return
	end
	redis.call('SET', KEYS[1], v, 'PX', exp)
	keep_steps(exp)
end

-- The fingerprint rules of backends.FingerprintMatches and
-- backends.BoundFingerprint: empty on either side matches; a write keeps
-- the stored one when given none.
local function fp_matches(stored, given)
	return stored == '' or given == '' or stored == given
end

local function bound_fp(stored, given)
	if given == '' then
		return stored
	end
	return given
end

-- notify wakes the watchers of the key: cmd is 'PUBLISH', 'SPUBLISH' or ''.
local function notify(cmd, key, what)
	if cmd ~= '' then
		redis.call(cmd, key, what)
	end
end


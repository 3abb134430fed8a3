-- record.lua: the record layout, prepended to every script (see
-- redislua.go), so that the server side reads and writes records in this
-- one place; the Go side decodes them in redisstore's decodeRecord alone.
--
-- A record is one string:
--   pending:   'p' len(fp) fp len(owner) owner lease-end-ms [' ' since-ms]
--   completed: 'c' len(fp) fp len(owner) owner outcome
--   held:      'h' len(fp) fp len(owner) owner lease-end-ms ' ' since-ms
--              ' ' hold-end-ms ' ' len(code) ' ' code message
-- where len(fp) and len(owner) are one byte, the -ms fields and
-- len(code) are canonical decimals, and -ms fields count milliseconds on
-- the server's clock (TIME). since-ms is when the record was claimed
-- (pending; absent from records written before it existed) or held. A
-- held record's lease-end-ms is a reconciler's lease (its owner is then
-- the reconciler's token). The key's PX TTL is the record's expiry: at
-- least the lease end while pending, at least the hold end and the
-- reconciler's lease end while held.
--
-- Replies that report a record a script did not change: the whole record
-- string when it is completed, {record, now-ms} when it is pending or held.

local function now_ms()
	local t = redis.call('TIME')
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- completed reports, from its first byte alone, whether cur is a
-- completed record: the replay path returns it whole without parsing
-- (the Go side validates it).
local function completed(cur)
	return string.byte(cur, 1) == 99 -- 'c'
end

-- decode returns {state = 'p', 'c' or 'h', fp, owner, lease_end and since
-- (pending and held; since may be nil on an old pending record), hold_end,
-- code and message (held), outcome_at (completed: where the outcome
-- starts, see outcome)}, or raises an ONCECORRUPT error reply for a value
-- this package did not write.
local function decode(cur)
	local st = string.sub(cur, 1, 1)
	local n = string.byte(cur, 2)
	local m = n and string.byte(cur, 3 + n)
	if (st ~= 'p' and st ~= 'c' and st ~= 'h') or not m or #cur < 3 + n + m then
		error({err = 'ONCECORRUPT record layout'})
	end
	local r = {state = st, fp = string.sub(cur, 3, 2 + n), owner = string.sub(cur, 4 + n, 3 + n + m)}
	local rest = string.sub(cur, 4 + n + m)
	if st == 'p' then
		local lease, since = string.match(rest, '^(%d+) (%d+)$')
		if not lease then
			lease = string.match(rest, '^(%d+)$')
		end
		r.lease_end, r.since = tonumber(lease), tonumber(since)
		if not r.lease_end then
			error({err = 'ONCECORRUPT record lease'})
		end
	elseif st == 'h' then
		local lease, since, hold, codelen, at = string.match(rest, '^(%d+) (%d+) (%d+) (%d+) ()')
		if not at or #rest < at - 1 + tonumber(codelen) then
			error({err = 'ONCECORRUPT held record'})
		end
		r.lease_end, r.since, r.hold_end = tonumber(lease), tonumber(since), tonumber(hold)
		r.code = string.sub(rest, at, at + tonumber(codelen) - 1)
		r.message = string.sub(rest, at + tonumber(codelen))
	else
		r.outcome_at = 4 + n + m
	end
	return r
end

-- outcome is the outcome of a decoded completed record.
local function outcome(cur, r)
	return string.sub(cur, r.outcome_at)
end

-- encode_pending writes since when known (records claimed before it
-- existed keep lacking it).
local function encode_pending(fp, owner, lease_end, since)
	local v = 'p' .. string.char(#fp) .. fp .. string.char(#owner) .. owner .. string.format('%d', lease_end)
	if since then
		v = v .. ' ' .. string.format('%d', since)
	end
	return v
end

local function encode_held(r)
	return 'h' .. string.char(#r.fp) .. r.fp .. string.char(#r.owner) .. r.owner ..
		string.format('%d %d %d %d ', r.lease_end, r.since, r.hold_end, #r.code) .. r.code .. r.message
end

local function encode_completed(fp, owner, outcome)
	return 'c' .. string.char(#fp) .. fp .. string.char(#owner) .. owner .. outcome
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

-- existing is the reply for a record the script leaves unchanged; now is
-- the time the script decided by (nil: read it now), so that the lease
-- left it reports agrees with that decision.
local function existing(cur, r, now)
	if r.state == 'c' then
		return cur
	end
	return {cur, now or now_ms()}
end

-- notify wakes the watchers of the key: cmd is 'PUBLISH', 'SPUBLISH' or ''.
local function notify(cmd, key, what)
	if cmd ~= '' then
		redis.call(cmd, key, what)
	end
end


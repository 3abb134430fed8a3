package redisstore

import (
	"math"
	"strconv"
	"time"

	"github.com/stagedoor/once/backends"
)

// Replies of claim.lua (and 1 of the other scripts).
const (
	replyClaimed  = 1
	replyTookOver = 2
)

// MaxDuration is the longest lease or retention the store keeps: Redis
// counts TTLs in whole milliseconds, so a time.Duration is stored as its
// milliseconds, rounded up (1 ns becomes 1 ms, never 0), and saturated at
// MaxDuration, the longest whole number of milliseconds a time.Duration
// holds (about 292 years). Longer durations, up to math.MaxInt64, mean
// MaxDuration: never a wrapped, short value.
const MaxDuration = time.Duration(maxMillis) * time.Millisecond

const maxMillis = math.MaxInt64 / int64(time.Millisecond)

// millis converts d to the milliseconds Redis stores: rounded up so that a
// positive duration never becomes 0 (which PX rejects) or shorter, at
// least 1 for a non-positive d (the shortest, never "forever"), and at
// most maxMillis.
func millis(d time.Duration) int64 {
	if d <= 0 {
		return 1
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return min(ms, maxMillis)
}

// duration converts milliseconds read from Redis to a time.Duration,
// saturating instead of overflowing.
func duration(ms int64) time.Duration {
	switch {
	case ms > maxMillis:
		return math.MaxInt64
	case ms < -maxMillis:
		return math.MinInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// The state bytes of the record layout.
const (
	statePending   = 'P'
	stateCompleted = 'C'
	stateHeld      = 'H'
)

// stored is a record as Redis holds it (layout in
// internal/redislua/record.lua). Its times are offsets in ms back from
// the key's expiry, so that the key's TTL, the server's clock, turns them
// into durations (see record).
type stored struct {
	state       backends.State
	owner       string
	fingerprint []byte // nil when empty
	outcome     []byte // completed; never nil
	// retention is a completed record's retention (ms), its PX when
	// written: an upper bound on its time left.
	retention int64
	// life is how long before the expiry the record was claimed (pending)
	// or held (held); leaseTail and holdTail how long before it the lease
	// and the hold end.
	life, leaseTail, holdTail int64
	code, message             string
}

// decodeRecord is the one Go function that parses a stored record:
//
//	pending:   'P' len(owner) owner len(fp) fp life-ms ' ' lease-tail-ms
//	completed: 'C' len(owner) owner len(fp) fp retention-ms ' ' outcome
//	held:      'H' len(owner) owner len(fp) fp life-ms ' ' lease-tail-ms
//	           ' ' hold-tail-ms ' ' len(code) ' ' code message
//
// where len(owner) and len(fp) are one byte and the other numbers are
// canonical decimals (no sign, no leading zero). Anything else is
// ErrCorrupt. It copies raw once; the fingerprint and the outcome
// share that copy.
func decodeRecord(op, raw string) (stored, error) {
	if len(raw) < 3 {
		return stored{}, corrupt(op, "record header")
	}
	var r stored
	switch raw[0] {
	case statePending:
		r.state = backends.StatePending
	case stateCompleted:
		r.state = backends.StateCompleted
	case stateHeld:
		r.state = backends.StateHeld
	default:
		return stored{}, corrupt(op, "record state")
	}
	m := int(raw[1])
	if len(raw) < 3+m {
		return stored{}, corrupt(op, "record owner")
	}
	n := int(raw[2+m])
	start := 3 + m + n
	if len(raw) < start {
		return stored{}, corrupt(op, "record fingerprint")
	}
	r.owner = raw[2 : 2+m]
	if r.state == backends.StateCompleted {
		sp := indexSpace(raw[start:])
		var ok bool
		if sp >= 0 {
			r.retention, ok = parseMillis(raw[start : start+sp])
		}
		if !ok {
			return stored{}, corrupt(op, "completed record retention")
		}
		b := []byte(raw[3+m:])
		if n > 0 {
			r.fingerprint = b[:n:n]
		}
		r.outcome = b[n+sp+1 : len(b) : len(b)]
		return r, nil
	}
	if n > 0 {
		r.fingerprint = []byte(raw[3+m : start])
	}
	rest := raw[start:]
	if r.state == backends.StateHeld {
		return decodeHeld(op, r, rest)
	}
	sp := indexSpace(rest)
	var ok1, ok2 bool
	if sp >= 0 {
		r.life, ok1 = parseMillis(rest[:sp])
		r.leaseTail, ok2 = parseMillis(rest[sp+1:])
	}
	if !ok1 || !ok2 {
		return stored{}, corrupt(op, "pending record times")
	}
	return r, nil
}

func indexSpace(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return i
		}
	}
	return -1
}

// decodeHeld parses the tail of a held record:
// life-ms ' ' lease-tail-ms ' ' hold-tail-ms ' ' len(code) ' ' code message.
func decodeHeld(op string, r stored, rest string) (stored, error) {
	var nums [4]int64
	for i := range nums {
		sp := indexSpace(rest)
		if sp < 0 {
			return stored{}, corrupt(op, "held record fields")
		}
		v, ok := parseMillis(rest[:sp])
		if !ok {
			return stored{}, corrupt(op, "held record number")
		}
		nums[i], rest = v, rest[sp+1:]
	}
	if nums[3] > int64(len(rest)) {
		return stored{}, corrupt(op, "held record code")
	}
	r.life, r.leaseTail, r.holdTail = nums[0], nums[1], nums[2]
	r.code, r.message = rest[:nums[3]], rest[nums[3]:]
	return r, nil
}

// parseMillis parses a canonical non-negative decimal int64.
func parseMillis(b string) (int64, bool) {
	if len(b) == 0 || len(b) > 19 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var v int64
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if v > (math.MaxInt64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// record is r as the store reports it when its key has ttl ms left
// (PTTL), its ExpiresIn the ttl. A completed record reports at most its
// retention: ttl < 0 (not read) reports the retention; a pending or held
// one reports no ExpiresIn then.
func (r stored) record(ttl int64) backends.Record {
	rec := backends.Record{State: r.state, Fingerprint: r.fingerprint}
	if r.state == backends.StateCompleted {
		rec.Outcome = r.outcome
		left := r.retention
		if ttl >= 0 {
			left = min(ttl, left)
		}
		// PTTL truncates: 0 means less than a millisecond left, which is
		// not "not reported" (zero).
		rec.ExpiresIn = max(duration(left), time.Nanosecond)
		return rec
	}
	if ttl >= 0 {
		rec.ExpiresIn = duration(ttl)
	}
	rec.LeaseRemaining = duration(subSaturating(ttl, r.leaseTail))
	rec.Age = duration(subSaturating(r.life, ttl))
	if r.state == backends.StateHeld {
		rec.Held = backends.HeldInfo{
			Remaining: duration(subSaturating(ttl, r.holdTail)),
			Code:      r.code, Message: r.message,
		}
	}
	return rec
}

// subSaturating returns a-b, clamped to the int64 range.
func subSaturating(a, b int64) int64 {
	d := a - b
	if (b < 0 && d < a) || (b > 0 && d > a) {
		if b < 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

// appendPending appends the pending record of a new claim, as Claim
// writes it with SET NX: claimed now and living life ms, its lease ending
// leaseTail ms before its expiry.
func appendPending(b []byte, owner string, fp []byte, life, leaseTail int64) []byte {
	b = append(b, statePending, byte(len(owner)))
	b = append(b, owner...)
	b = append(b, byte(len(fp)))
	b = append(b, fp...)
	b = strconv.AppendInt(b, life, 10)
	b = append(b, ' ')
	return strconv.AppendInt(b, leaseTail, 10)
}

// existing decodes the reply {record, ttl} a script gives for a record it
// did not change.
func existing(op string, v any) (backends.Record, error) {
	raw, ttl, err := recordReply(op, v)
	if err != nil {
		return backends.Record{}, err
	}
	r, err := decodeRecord(op, raw)
	if err != nil {
		return backends.Record{}, err
	}
	return r.record(ttl), nil
}

// recordReply splits a script's reply {record, ttl} (see record.lua) into
// the record, never empty, and the key's TTL in ms, never negative.
func recordReply(op string, v any) (raw string, ttl int64, err error) {
	reply, ok := v.([]any)
	if !ok || len(reply) != 2 {
		return "", 0, corrupt(op, "reply shape")
	}
	raw, ok1 := reply[0].(string)
	ttl, ok2 := reply[1].(int64)
	if !ok1 || !ok2 || ttl < 0 || raw == "" {
		return "", 0, corrupt(op, "reply types")
	}
	return raw, ttl, nil
}

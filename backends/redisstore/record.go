package redisstore

import (
	"bytes"
	"math"
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

// stored is a record as Redis holds it (layout in
// internal/redislua/record.lua).
type stored struct {
	state       backends.State
	fingerprint []byte // nil when empty
	owner       string
	leaseEnd    int64  // pending and held: ms on the server's clock
	outcome     []byte // completed; never nil
	// since is when the record was claimed or held (ms); hasSince is false
	// on a pending record written before the layout had it.
	since    int64
	hasSince bool
	// holdEnd, code and message describe a held record.
	holdEnd       int64
	code, message string
}

// decodeRecord is the one Go function that parses a stored record:
//
//	pending:   'p' len(fp) fp len(owner) owner lease-end-ms [' ' since-ms]
//	completed: 'c' len(fp) fp len(owner) owner outcome
//	held:      'h' len(fp) fp len(owner) owner lease-end-ms ' ' since-ms
//	           ' ' hold-end-ms ' ' len(code) ' ' code message
//
// where len(fp) and len(owner) are one byte and the other numbers are
// canonical decimals (no sign, no leading zero). Anything else is
// ErrCorrupt. It copies raw once; the fingerprint and the outcome share
// that copy.
func decodeRecord(op, raw string) (stored, error) {
	if len(raw) < 3 {
		return stored{}, corrupt(op, "record header")
	}
	var r stored
	switch raw[0] {
	case 'p':
		r.state = backends.StatePending
	case 'c':
		r.state = backends.StateCompleted
	case 'h':
		r.state = backends.StateHeld
	default:
		return stored{}, corrupt(op, "record state")
	}
	n := int(raw[1])
	if len(raw) < 3+n {
		return stored{}, corrupt(op, "record fingerprint")
	}
	m := int(raw[2+n])
	start := 3 + n + m
	if len(raw) < start {
		return stored{}, corrupt(op, "record owner")
	}
	b := []byte(raw)
	if n > 0 {
		r.fingerprint = b[2 : 2+n : 2+n]
	}
	r.owner = raw[3+n : start]
	rest := b[start:len(b):len(b)]
	if r.state == backends.StateCompleted {
		r.outcome = rest
		return r, nil
	}
	if r.state == backends.StateHeld {
		return decodeHeld(op, r, rest)
	}
	lease, since, hasSince := rest, []byte(nil), false
	if i := bytes.IndexByte(rest, ' '); i >= 0 {
		lease, since, hasSince = rest[:i], rest[i+1:], true
	}
	end, ok := parseMillis(lease)
	if !ok {
		return stored{}, corrupt(op, "record lease end")
	}
	r.leaseEnd = end
	if hasSince {
		if r.since, ok = parseMillis(since); !ok {
			return stored{}, corrupt(op, "record claim time")
		}
		r.hasSince = true
	}
	return r, nil
}

// decodeHeld parses the tail of a held record:
// lease-end-ms ' ' since-ms ' ' hold-end-ms ' ' len(code) ' ' code message.
func decodeHeld(op string, r stored, rest []byte) (stored, error) {
	var nums [4]int64
	for i := range nums {
		sp := bytes.IndexByte(rest, ' ')
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
	r.leaseEnd, r.since, r.hasSince, r.holdEnd = nums[0], nums[1], true, nums[2]
	r.code, r.message = string(rest[:nums[3]]), string(rest[nums[3]:])
	return r, nil
}

// parseMillis parses a canonical non-negative decimal int64.
func parseMillis(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var v int64
	for _, c := range b {
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

// record is r as the store reports it at server time nowMs.
func (r stored) record(nowMs int64) backends.Record {
	rec := backends.Record{State: r.state, Fingerprint: r.fingerprint}
	if r.state == backends.StateCompleted {
		rec.Outcome = r.outcome
		return rec
	}
	rec.LeaseRemaining = duration(subSaturating(r.leaseEnd, nowMs))
	if r.hasSince {
		rec.Age = duration(subSaturating(nowMs, r.since))
	}
	if r.state == backends.StateHeld {
		rec.Held = backends.HeldInfo{
			Remaining: duration(subSaturating(r.holdEnd, nowMs)),
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

// existing decodes the reply a script gives for a record it did not
// change: the whole record string when completed, {record, now ms} when
// pending or held.
func existing(op string, v any) (backends.Record, error) {
	var raw string
	var now int64
	pendingReply := false
	switch v := v.(type) {
	case string:
		raw = v
	case []any:
		pendingReply = true
		var ok1, ok2 bool
		if len(v) == 2 {
			raw, ok1 = v[0].(string)
			now, ok2 = v[1].(int64)
		}
		if !ok1 || !ok2 {
			return backends.Record{}, corrupt(op, "pending reply")
		}
	default:
		return backends.Record{}, corrupt(op, "reply type")
	}
	r, err := decodeRecord(op, raw)
	if err != nil {
		return backends.Record{}, err
	}
	if (r.state != backends.StateCompleted) != pendingReply {
		return backends.Record{}, corrupt(op, "reply does not match the record's state")
	}
	return r.record(now), nil
}

package redisstore

import (
	"time"

	"github.com/stagedoor/once/backends"
)

// Replies of claim.lua and resolve.lua (see the layout in internal/redislua/claim.lua).
const (
	replyClaimed  = 1
	replyTookOver = 2
)

// existing decodes the reply a script gives for a record it did not
// change: the whole completed record as a string, or {fingerprint,
// lease ms left} for a pending one.
func existing(op string, v any) (backends.Record, error) {
	switch v := v.(type) {
	case string:
		return decodeCompleted(op, v)
	case []any:
		if len(v) != 2 {
			return backends.Record{}, corrupt(op, "pending reply length")
		}
		fp, ok1 := v[0].(string)
		left, ok2 := v[1].(int64)
		if !ok1 || !ok2 {
			return backends.Record{}, corrupt(op, "pending reply types")
		}
		return backends.Record{
			State:          backends.StatePending,
			Fingerprint:    bytesOrNil(fp),
			LeaseRemaining: time.Duration(left) * time.Millisecond,
		}, nil
	default:
		return backends.Record{}, corrupt(op, "reply type")
	}
}

// decodeCompleted parses 'c' len(fp) fp len(owner) owner outcome. It copies
// the record once; Fingerprint and Outcome share that copy.
func decodeCompleted(op, s string) (backends.Record, error) {
	if len(s) < 3 || s[0] != 'c' {
		return backends.Record{}, corrupt(op, "record header")
	}
	n := int(s[1])
	if len(s) < 3+n {
		return backends.Record{}, corrupt(op, "record fingerprint")
	}
	m := int(s[2+n])
	start := 3 + n + m
	if len(s) < start {
		return backends.Record{}, corrupt(op, "record owner")
	}
	b := []byte(s)
	r := backends.Record{State: backends.StateCompleted, Outcome: b[start:len(b):len(b)]}
	if n > 0 {
		r.Fingerprint = b[2 : 2+n : 2+n]
	}
	return r, nil
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// millis converts d to whole milliseconds for PX, rounding up so that a
// positive duration never becomes 0 (which Redis rejects) and never
// shortens.
func millis(d time.Duration) int64 {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return max(int64(ms), 1)
}

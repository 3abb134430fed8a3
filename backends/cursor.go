package backends

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// MaxCursorLen bounds the cursors a CursorCodec decodes: far more than
// the positions of the stores of this module take (a Redis node address,
// SCAN cursors and a record key, hex-encoded).
const MaxCursorLen = 64 << 10

// CursorCodec writes and reads the List cursors of one ListParams, for a
// store that keeps its position in a walk as a few fields of its own (a
// state, a scope and a key, a SCAN cursor...). A cursor is
//
//	binding "." hex(field 1) "." ... "." hex(field n) "." check
//
// where binding (17 characters of [0-9a-f]) records the State filter and
// a 64-bit FNV-1a hash of Scope and KeyPrefix, each field is its bytes in
// lower-case hex, and check is the 64-bit FNV-1a hash of all before it,
// in 16 hex digits. The binding refuses a cursor reused with other
// filters; the check refuses one altered or cut short (one changed byte
// always, anything else but with a chance of 2^-64). The check is no
// signature: a caller that means to can forge a cursor, and a store must
// still refuse the fields it cannot use (CursorUint, CheckCursorRecord).
// OlderThan, Limit and Cursor are not bound: a walk may change the first
// two between pages.
type CursorCodec struct {
	p       ListParams
	binding string
}

// Cursors returns the CursorCodec of p, which hashes p's filters once for
// every cursor it writes and reads.
func (p ListParams) Cursors() CursorCodec {
	h := fnv.New64a()
	_, _ = h.Write([]byte(strconv.Itoa(len(p.Scope)) + ":" + p.Scope + p.KeyPrefix))
	return CursorCodec{p: p, binding: strconv.Itoa(int(p.State)%10) + fmt.Sprintf("%016x", h.Sum64())}
}

// Encode returns the cursor of the position fields, for a walk with the
// codec's ListParams. The store decodes it with Decode and the same number
// of fields.
func (c CursorCodec) Encode(fields ...string) string {
	var b strings.Builder
	b.WriteString(c.binding)
	for _, f := range fields {
		b.WriteByte('.')
		b.WriteString(hex.EncodeToString([]byte(f)))
	}
	body := b.String()
	return body + "." + checkOf(body)
}

// checkOf returns the check of a cursor's body: its 64-bit FNV-1a hash in
// 16 hex digits.
func checkOf(s string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("%016x", h.Sum64())
}

// Decode returns the n fields of cursor, one that Encode returned with n
// fields for the same State, Scope and KeyPrefix; nil for "" (the start
// of a walk). It refuses with a *ListParamsError (Field "Cursor")
// anything else: longer than MaxCursorLen, of another shape or number of
// fields, a non-canonical spelling, a check that does not match (an
// altered or truncated cursor), and a binding of other filters (the
// Reason names the State filter when that differs, else Scope or
// KeyPrefix). It takes time linear in len(cursor) and never panics.
func (c CursorCodec) Decode(cursor string, n int) ([]string, error) {
	if cursor == "" {
		return nil, nil
	}
	if len(cursor) > MaxCursorLen || n < 0 {
		return nil, BadCursor()
	}
	parts := strings.SplitN(cursor, ".", n+3)
	if len(parts) != n+2 {
		return nil, BadCursor()
	}
	body := cursor[:len(cursor)-len(parts[n+1])-1]
	if parts[n+1] != checkOf(body) {
		return nil, BadCursor()
	}
	fields := make([]string, n)
	for i, p := range parts[1 : n+1] {
		b, err := hex.DecodeString(p)
		if err != nil || hex.EncodeToString(b) != p {
			return nil, BadCursor()
		}
		fields[i] = string(b)
	}
	if err := c.checkBinding(parts[0]); err != nil {
		return nil, err
	}
	return fields, nil
}

// checkBinding returns nil when binding, read from a cursor, is the
// codec's, and a *ListParamsError otherwise.
func (c CursorCodec) checkBinding(binding string) error {
	switch {
	case binding == c.binding:
		return nil
	case len(binding) != len(c.binding):
		return BadCursor()
	case binding[0] != c.binding[0]:
		return &ListParamsError{Field: "Cursor", Reason: "returned for another State filter"}
	}
	return &ListParamsError{Field: "Cursor", Reason: "returned for another Scope or KeyPrefix filter"}
}

// State decodes a field written as a walked state's String ("pending",
// "held" or "completed"). It refuses, with a *ListParamsError, any other
// field and a state the codec's State filter does not select (zero
// selects pending and held).
func (c CursorCodec) State(field string) (State, error) {
	var st State
	switch field {
	case StatePending.String():
		st = StatePending
	case StateHeld.String():
		st = StateHeld
	case StateCompleted.String():
		st = StateCompleted
	default:
		return 0, BadCursor()
	}
	if c.p.State == 0 && st == StateCompleted || c.p.State != 0 && st != c.p.State {
		return 0, BadCursor()
	}
	return st, nil
}

// CursorUint decodes a field written with strconv.FormatUint(v, 10): it
// refuses, with a *ListParamsError, anything else (signs, leading zeros,
// spaces) and a number above limit.
func CursorUint(field string, limit uint64) (uint64, error) {
	v, err := strconv.ParseUint(field, 10, 64)
	if err != nil || v > limit || strconv.FormatUint(v, 10) != field {
		return 0, BadCursor()
	}
	return v, nil
}

// CheckCursorRecord returns nil when scope and key, read from a cursor,
// are both empty (no record yet) or a scope and a key that a record can
// have (NameProblem finds nothing), and a *ListParamsError otherwise: so
// that no byte a store's server refuses (PostgreSQL: NUL, invalid UTF-8)
// reaches it from a forged cursor.
func CheckCursorRecord(scope, key string) error {
	switch {
	case scope == "" && key == "":
		return nil
	case scope == "" || key == "" || NameProblem(scope, MaxScopeLen) != "" || NameProblem(key, MaxKeyLen) != "":
		return BadCursor()
	}
	return nil
}

// BadCursor returns the *ListParamsError of a Cursor that a store cannot
// parse: one it did not return (garbage, truncated or altered), or one
// from an earlier version of its format.
func BadCursor() error {
	return &ListParamsError{Field: "Cursor", Reason: "not a cursor this store returned"}
}

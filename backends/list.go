package backends

import (
	"context"
	"errors"
	"time"
)

// DefaultListLimit is the page size of List when ListParams.Limit is not
// positive; MaxListLimit bounds it.
const (
	DefaultListLimit = 100
	MaxListLimit     = 10_000
)

// ListParams are the arguments of Lister.List.
type ListParams struct {
	// State selects StatePending, StateHeld or StateCompleted records;
	// zero selects pending and held ones, the records an operator or a
	// reconciler acts on. A completed record is listed without its Outcome
	// (Get returns it) and with Age zero, so an OlderThan above zero
	// selects none.
	State State
	// OlderThan selects records whose Age is at least OlderThan.
	OlderThan time.Duration
	// Scope, when not empty, selects the records of that scope alone;
	// empty lists across scopes. A scope no record can have is refused
	// (see Validate).
	Scope string
	// KeyPrefix, when not empty, selects keys that start with it. It is
	// whole characters: a prefix no key can start with is refused (see
	// Validate).
	KeyPrefix string
	// Cursor is "" for the first page and ListPage.Next afterwards. It is
	// opaque and belongs to the store that returned it, for the State,
	// Scope and KeyPrefix it was returned for: List refuses it with other
	// ones (a *ListParamsError), as it refuses a cursor it did not return,
	// altered or cut short, or one of an earlier version of the store (see
	// CursorCodec). OlderThan and Limit may change between the pages of a
	// walk.
	Cursor string
	// Limit bounds the records of one page (DefaultListLimit when not
	// positive, at most MaxListLimit: see PageLimit).
	Limit int
}

// PageLimit is the most records one page of List holds for p: p.Limit,
// DefaultListLimit when it is not positive, and at most MaxListLimit.
// Every store sizes its pages with it.
func (p ListParams) PageLimit() int {
	if p.Limit <= 0 {
		return DefaultListLimit
	}
	return min(p.Limit, MaxListLimit)
}

// Listed is one record of a ListPage, its ExpiresIn set.
type Listed struct {
	Scope  string
	Key    string
	Record Record
}

// ListPage is one page of Lister.List.
type ListPage struct {
	// Records are this page's matching records, at most Limit of them. A
	// page may hold fewer, even none, while Next is not empty.
	Records []Listed
	// Next is the cursor of the next page; "" when the walk is over.
	Next string
}

// Counts are what Lister.Count reports.
type Counts struct {
	// Pending, Held and Completed count the live records by state.
	Pending, Held, Completed int64
	// OldestPending and OldestHeld are the largest Age among pending and
	// held records; zero when there are none.
	OldestPending, OldestHeld time.Duration
	// Expired counts expired records the store still holds, waiting for
	// a sweep (zero on a store that drops them itself, such as Redis).
	Expired int64
	// Stored is the number of records the store holds, live or expired;
	// SizeBytes the space they take when the store can tell (zero
	// otherwise).
	Stored, SizeBytes int64
}

// Lister is implemented by stores that can find records for operators and
// reconcilers.
//
// A walk that starts with an empty Cursor and follows Next until it is
// empty returns every record that matches the parameters during the whole
// walk at least once (a record may appear twice, as with Redis SCAN; a
// record created, changed or expired during the walk may or may not
// appear). Each page costs the store work proportional to the records it
// examines, never a scan of the whole store per page.
type Lister interface {
	// List returns one page of the records p selects. It refuses
	// with a *ListParamsError (errors.Is ErrInvalidListParams), before it
	// sends anything to a server, what p.Validate refuses and a Cursor it
	// did not return for p's State, Scope and KeyPrefix; parsing a cursor
	// costs time linear in its length.
	List(ctx context.Context, p ListParams) (ListPage, error)
	// Count counts the records by state. It may examine every record
	// (linear in the store's size): it is for stats, not for hot paths.
	Count(ctx context.Context) (Counts, error)
}

// ErrInvalidListParams is matched (with errors.Is) by every
// *ListParamsError: ListParams a Lister refuses.
var ErrInvalidListParams = errors.New("once: invalid list parameters")

// ListParamsError reports a ListParams field that Lister.List refuses,
// on every store alike: a State, Scope or KeyPrefix that Validate
// refuses, or a Cursor that the store did not return or returned for
// other filters. It never contains the field's value.
type ListParamsError struct {
	// Field is "State", "Scope", "KeyPrefix" or "Cursor".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *ListParamsError) Error() string {
	return "once: list: invalid " + e.Field + ": " + e.Reason
}

// Is reports whether target is ErrInvalidListParams.
func (e *ListParamsError) Is(target error) bool { return target == ErrInvalidListParams }

// Validate returns a *ListParamsError when p.State is not zero (pending
// and held), StatePending, StateHeld or StateCompleted (Field "State"),
// when p.Scope is not empty and no record's scope can be it, or when no
// record's key can start with p.KeyPrefix: longer than MaxScopeLen or
// MaxKeyLen bytes, not valid UTF-8 (a prefix is whole characters), or
// with a control character, NUL included (Field "Scope" or "KeyPrefix",
// Reason that of NameProblem).
// It returns nil otherwise. Every Lister calls it first, on every store
// alike (PostgreSQL could not even send such text); it does not look at
// the cursor, which the store reads with a CursorCodec.
func (p ListParams) Validate() error {
	switch p.State {
	case 0, StatePending, StateHeld, StateCompleted:
	default:
		return &ListParamsError{Field: "State", Reason: "not pending, held or completed (nor zero, for pending and held)"}
	}
	if reason := NameProblem(p.Scope, MaxScopeLen); reason != "" {
		return &ListParamsError{Field: "Scope", Reason: reason}
	}
	if reason := NameProblem(p.KeyPrefix, MaxKeyLen); reason != "" {
		return &ListParamsError{Field: "KeyPrefix", Reason: reason}
	}
	return nil
}

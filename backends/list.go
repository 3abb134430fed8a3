package backends

import (
	"context"
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
	// State selects StatePending or StateHeld records; zero selects both.
	// Completed records are never listed: they answer for themselves.
	State State
	// OlderThan selects records whose Age is at least OlderThan.
	OlderThan time.Duration
	// Scope, when not empty, selects the records of that scope alone;
	// empty lists across scopes.
	Scope string
	// KeyPrefix, when not empty, selects keys that start with it.
	KeyPrefix string
	// Cursor is "" for the first page and ListPage.Next afterwards. It is
	// opaque and belongs to the store that returned it.
	Cursor string
	// Limit bounds the records of one page (DefaultListLimit when not
	// positive, at most MaxListLimit).
	Limit int
}

// Listed is one record of a ListPage.
type Listed struct {
	Scope  string
	Key    string
	Record Record
	// ExpiresIn is the time left before the record expires.
	ExpiresIn time.Duration
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

// Lister is implemented by stores that can find pending and held records
// for operators and reconcilers.
//
// A walk that starts with an empty Cursor and follows Next until it is
// empty returns every record that matches the parameters during the whole
// walk at least once (a record may appear twice, as with Redis SCAN; a
// record created, changed or expired during the walk may or may not
// appear). Each page costs the store work proportional to the records it
// examines, never a scan of the whole store per page.
type Lister interface {
	// List returns one page of pending and held records.
	List(ctx context.Context, p ListParams) (ListPage, error)
	// Count counts the records by state. It may examine every record
	// (linear in the store's size): it is for stats, not for hot paths.
	Count(ctx context.Context) (Counts, error)
}

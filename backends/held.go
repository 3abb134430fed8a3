package backends

import (
	"math"
	"time"
)

// The held state.
//
// An owner whose fn failed without knowing whether its effect happened (a
// timeout after the request left: the payment may or may not have been
// charged) must neither store an answer nor let the next retry run fn at
// once. It holds the record instead: the record becomes StateHeld — not
// running, not completed — for a hold period, with the held error's code
// and message for operators. Until the hold ends, a held record blocks
// claims (a duplicate is told it is in progress, and for how long); when
// it ends, a matching Claim takes it over as it takes over a lapsed lease
// and fn runs again. A Resolve stores the real outcome at any time.
//
// A reconciler that asks the downstream service what happened takes a
// short, fenced lease on a held record first (LeaseHeld), so that of
// several reconcilers running at once one resolves each key: a Resolve
// whose Owner is not the live lease's token is refused while that lease is
// live. The original owner's writes are fenced off once it holds: a held
// record is never completed, renewed or released.
//
// Every Store keeps the held state (Store.Hold, Store.LeaseHeld). On a
// held record, the other Store methods behave as follows: Claim reports it
// (Existing, State StateHeld) while its hold or a reconciler's lease is
// live, and takes it over (TookOver, fingerprints matching, the stored one
// kept when none is given) once both have ended; Complete, Renew and
// Release report false and write nothing, whoever asks; Resolve stores its
// outcome when the fingerprints match and no reconciler lease of another
// token is live (the reconciler holding the lease resolves with its token
// as Owner).

// HoldUntilResolved is the longest hold: a record held this long never
// becomes claimable again by itself; only a Resolve (or an operator's
// Delete) ends it. Backends store it as their longest duration (rule
// "Durations": at least 290 years on every backend).
const HoldUntilResolved time.Duration = math.MaxInt64

// Limits on what a hold stores about its error (HoldParams.Code and
// Message), in bytes. Every store refuses a longer code or message, or one
// that is not valid UTF-8 or contains NUL (HeldProblem; see "Inputs" in
// the package documentation). The core never sends one: it replaces
// invalid UTF-8 and NUL in an error's text and code with U+FFFD, and cuts
// them to these limits at a UTF-8 boundary, before calling Hold.
const (
	MaxHeldCodeLen    = 64
	MaxHeldMessageLen = 512
)

// HeldInfo describes a held record.
type HeldInfo struct {
	// Remaining is the time left on the hold by the store's clock; zero or
	// negative once it has ended (the record is then claimable).
	// HoldUntilResolved, or close to it, for a hold until resolved.
	Remaining time.Duration
	// Code and Message are the held error's code and message as the
	// holder gave them (see HoldParams). They are operator information:
	// the core never shows them to another caller of the key.
	Code, Message string
}

// Unbounded reports whether the hold lasts until resolved (it was made
// with HoldUntilResolved, or with a hold longer than a century).
func (h HeldInfo) Unbounded() bool { return h.Remaining > 100*365*24*time.Hour }

// HoldParams are the arguments of Store.Hold.
type HoldParams struct {
	Scope string
	Key   string
	// Owner is the token of the pending claim being held. Required: 1 to
	// MaxOwnerLen bytes.
	Owner string
	// For is the hold period, counted from now by the store's clock;
	// HoldUntilResolved holds until resolved.
	For time.Duration
	// Code and Message describe the held error for operators: valid
	// UTF-8 without NUL, at most MaxHeldCodeLen and MaxHeldMessageLen
	// bytes (HeldProblem); either may be empty.
	Code, Message string
	// Retention is how long the held record lives from now, and at least
	// until its hold ends.
	Retention time.Duration
}

// LeaseHeldParams are the arguments of Store.LeaseHeld.
type LeaseHeldParams struct {
	Scope string
	Key   string
	// Owner is the reconciler's token for this lease; its Resolve passes
	// it as ResolveParams.Owner. Required: 1 to MaxOwnerLen bytes.
	Owner string
	// Lease is how long the reconciler has the record to itself.
	Lease time.Duration
}

// LeaseHeldResult is the result of Store.LeaseHeld.
type LeaseHeldResult struct {
	// Leased reports that Owner now holds the reconciler lease.
	Leased bool
	// Existing is the record when Leased is false; State is zero when the
	// key is absent.
	Existing Record
}

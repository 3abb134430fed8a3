// Package backends defines the contract between the once core and its
// storage backends.
//
// A backend is a set of atomic primitives over records keyed by
// (scope, key). Policy — fingerprint checks, codecs, error classification,
// waiting, renewal schedules — lives in the core (package once). A backend
// never interprets an outcome: it stores and returns opaque bytes.
//
// # States, not errors
//
// Absent, expired and foreign-owned records are states a backend reports
// through its results (Claimed, Applied), never as errors. A backend returns
// an error only when it could not reach a decision: the store is
// unreachable, the context ended, or the data is corrupt. Each backend
// translates driver errors in one place, so that no raw driver error type
// escapes; the core wraps whatever it gets in its own store error.
//
// # Time
//
// Every lease and retention computation uses the store's clock (for example
// PostgreSQL's clock_timestamp() or Redis PX TTLs), never the caller's.
//
// # Rules every backend implements
//
// Life of a record. A pending record stays live — it blocks claims and is
// reported as pending — while its lease is live, whatever the retention:
// its expiry is at least its lease end, and every successful Renew moves
// the expiry to at least the new lease end. A pending record is therefore
// expired when both its lease and its retention have ended. A completed
// record lives Retention from its completion (Complete or Resolve). An
// expired record is absent in every respect.
//
// Durations. Every positive time.Duration, up to math.MaxInt64, means
// "that long": a backend never lets a lease or a retention wrap into a
// short (or negative) value. A backend whose native range is smaller
// saturates at its own maximum, which it documents, and rounds a positive
// value below its resolution up to its resolution, never down to zero.
// The core rejects non-positive leases and retentions before any store
// call; a backend given one treats it as its smallest positive duration
// (the lease or the record ends at once), never as "forever".
//
// Fingerprints. An empty fingerprint means "no check", on either side:
// FingerprintMatches(stored, given) is true when either is empty, and a
// constant-time equality otherwise. A key stays bound to the first
// non-empty fingerprint written for it: a takeover or a Resolve made with
// an empty fingerprint keeps the stored one, and a non-empty fingerprint
// given to a record stored without one binds it.
//
// Bytes. Every byte slice in a Record a store returns (Fingerprint,
// Outcome, Steps, from any method: Claim, Resolve, LeaseHeld, Admin.Get,
// Lister.List), and ClaimResult.Steps, belongs to the caller: the store
// never reads or writes it after returning, the caller may modify it or
// append to it, and doing so changes neither the stored record nor any
// other slice returned (not the other slice of the same Record either).
// Likewise a store keeps no slice of its parameters
// (ClaimParams.Fingerprint, CompleteParams.Outcome,
// CheckpointParams.Steps, …) after returning: it copies what it stores,
// and the caller may reuse its buffers at once. A zero-copy codec's value
// aliases the outcome bytes it decoded, so the core relies on this rule to
// hand each caller a value of its own.
//
// Re-sent writes. A driver may re-send a command whose reply was lost
// (go-redis retries on network errors). Every write reports on a re-send
// what it reported on the first send, or a result that leads the caller
// to the same decision: a re-sent Claim by the same Owner reports Claimed
// with the record's checkpoints (never TookOver, never the caller's own
// claim as a duplicate); a re-sent Complete or Resolve with the same Owner
// and outcome reports success; a re-sent Renew or Checkpoint reports true
// while the claim is still held; a re-sent Hold by the same Owner reports
// true, and a re-sent LeaseHeld by the same token reports the lease. Two
// writes are exceptions, which may report false on a re-send of a first
// send that applied: Release (a record without checkpoints is gone either
// way, one with checkpoints is left claimable: all the caller needs, and
// the core ignores Release's result) and Admin.Delete (likewise gone; Delete
// carries no token by which the re-send could recognise its own earlier
// delete, so its false then means "no live record now", not "there was
// none").
//
// A record the store cannot see. A store whose Claim or Resolve waits for
// a lock held by another uncommitted transaction (a SQL store: that
// transaction inserted or locked the key's row, which stays invisible
// until it commits) may give up after its lock timeout. It then reports a
// stand-in, not an error (the key is busy; the store did not fail): for
// Claim, Claimed and TookOver false; for Resolve, Resolved false; and in
// both, Existing = Record{State: StatePending, Fingerprint: a copy of
// p.Fingerprint (or empty), LeaseRemaining: a short positive retry hint},
// every other field zero. The row's real fingerprint is unknown, so the
// store reports one that FingerprintMatches the caller's: the core then
// never answers ErrKeyReused for a record it has not seen, and a retry
// learns the truth. The core treats the stand-in as any live pending
// claim: Do answers an *InProgressError with Held false, LeaseRemaining
// the hint and RetryAfter min(hint, 1 s), or, with WithWait, waits (the
// hint at most, less on a Watch wake-up or a short backoff) and claims
// again; once.Resolve answers an *InProgressError with Held false; a
// Reconciler counts the key Busy; package localcache does not cache it. It
// must not be StateHeld (the core would report the key held, with no hold
// left) nor carry a zero hint (a caller told RetryAfter 0 retries at once
// into the same lock). The PostgreSQL and MySQL stores report a hint of
// 1 s. The other methods (Complete, Renew, Release, Hold, LeaseHeld) have
// no such answer: they return the store's lock-timeout error, since they
// could not reach a decision.
//
// # Inputs
//
// Every operation refuses, with the store's own typed input error and
// before any state change, statement or command, a parameter no record
// can have or be written with:
//
//   - a Scope or Key that is empty, longer than MaxScopeLen or MaxKeyLen
//     bytes, or refused by NameProblem (Claim, Complete, Renew, Release,
//     Checkpoint, Resolve, Hold, LeaseHeld, Admin's Get and Delete,
//     Watch);
//   - an Owner that OwnerProblem refuses: longer than MaxOwnerLen bytes,
//     not valid UTF-8, containing NUL, or empty where one is required.
//     Claim, Complete, Renew, Release, Checkpoint, Hold and LeaseHeld
//     require one (it fences every later write); Resolve's may be empty (see
//     ResolveParams.Owner);
//   - a Fingerprint longer than MaxFingerprintLen bytes, which
//     FingerprintProblem refuses (Claim, Resolve); an empty one means "no
//     check";
//   - a held Code or Message that HeldProblem refuses (Hold): longer than
//     MaxHeldCodeLen or MaxHeldMessageLen bytes, not valid UTF-8, or
//     containing NUL. The pending record stays pending and its owner's.
//
// The core never sends any of them (it validates scopes, keys and
// fingerprints first, its owner tokens are 22 base64url characters, and it
// makes a held error's code and text valid and cuts them to the limits),
// so only a direct caller meets these errors. The checks cost a length check, and a
// pass over a scope's, a key's and an owner's bytes (and a hold's code
// and message), with no allocation when the input is valid.
//
// # Implementing a backend
//
// Run the conformance suite in package backendtest from the backend's tests;
// it exercises every rule written on the methods below.
package backends

import (
	"context"
	"crypto/subtle"
	"errors"
	"time"
)

// MaxScopeLen and MaxKeyLen bound the byte length of a scope and a key,
// MaxFingerprintLen that of a fingerprint (ClaimParams.Fingerprint,
// ResolveParams.Fingerprint) and MaxOwnerLen that of an owner token (the
// Owner of every operation's parameters). The core validates scopes, keys
// and fingerprints before any store call, and sends owner tokens of 22
// base64url characters; every store refuses a direct caller's violation too
// (see "Inputs" in the package documentation).
const (
	MaxScopeLen       = 255
	MaxKeyLen         = 255
	MaxFingerprintLen = 64
	MaxOwnerLen       = 255
)

// State is the lifecycle state of a stored record.
type State uint8

const (
	// StatePending is a claim whose owner has not completed it yet. Its
	// lease may be live or expired.
	StatePending State = iota + 1
	// StateCompleted is a record that holds the final outcome of its key.
	StateCompleted
	// StateHeld is a claim whose owner gave up without knowing the outcome
	// (see Store.Hold): not running, not completed, blocking claims until
	// its hold ends or a Resolve stores the real outcome.
	StateHeld
)

// String returns "pending", "completed" or "held".
func (s State) String() string {
	switch s {
	case StatePending:
		return "pending"
	case StateCompleted:
		return "completed"
	case StateHeld:
		return "held"
	default:
		return "unknown"
	}
}

// Record is what a backend reports about an existing, unexpired record.
//
// Its byte slices (Fingerprint, Outcome) belong to the caller: the store
// that returned the Record never reads or writes them afterwards, and the
// caller may modify them (see "Bytes" in the package documentation).
type Record struct {
	// State is StatePending, StateCompleted or StateHeld.
	State State
	// Fingerprint is the digest stored with the record; empty when the
	// claim was made without one.
	Fingerprint []byte
	// Outcome is the encoded outcome of a completed record; nil while
	// pending.
	Outcome []byte
	// LeaseRemaining is the time left on a pending record's lease, by the
	// store's clock; zero or negative when the lease has expired. On a held
	// record it is the time left on a reconciler's lease (see
	// Store.LeaseHeld), zero or negative when none is live. Zero for a
	// completed record.
	LeaseRemaining time.Duration
	// Age is how long ago, by the store's clock, a pending record was
	// claimed (or taken over) and a held record was held. Zero for a
	// completed record, and on a store that does not record it (a store
	// that implements Lister records it).
	Age time.Duration
	// Held describes a held record; the zero value otherwise.
	Held HeldInfo
	// ExpiresIn is the time left before the record expires, by the
	// store's clock, as of the read that returned it. Admin.Get and
	// Lister.List report it on every record; the other methods may leave
	// it zero (not reported), and a store that reports it on a completed
	// record reports it on every completed record. A cache of completed
	// records (package localcache) never keeps an entry longer than it.
	ExpiresIn time.Duration
	// Steps is the record's checkpoints (see Store.Checkpoint), nil when
	// it has none. Only Admin.Get reports them; every other method leaves
	// Steps nil, so that a replay reads no more than the outcome.
	Steps []byte
}

// ClaimParams are the arguments of Store.Claim.
type ClaimParams struct {
	Scope string
	Key   string
	// Fingerprint is stored with a new claim; at most MaxFingerprintLen
	// bytes. An expired lease is taken over only when
	// FingerprintMatches(record.Fingerprint, Fingerprint); a takeover with
	// an empty Fingerprint keeps the stored one.
	Fingerprint []byte
	// Owner is the token of the new claim; every later write is fenced by
	// it. Required: 1 to MaxOwnerLen bytes of valid UTF-8, no NUL.
	Owner string
	// Lease is how long the claim stays exclusive without renewal.
	Lease time.Duration
	// Retention is how long the record lives from the claim, and at least
	// until its lease ends; Complete restarts it.
	Retention time.Duration
}

// ClaimResult is the result of Store.Claim.
type ClaimResult struct {
	// Claimed reports that the caller's Owner now holds a pending claim on
	// the key: the key was absent, its record had expired, or its pending
	// lease had expired (TookOver).
	Claimed bool
	// TookOver reports that the claim replaced a pending record whose lease
	// had expired (its owner presumably crashed).
	TookOver bool
	// Existing is the record that prevented the claim when Claimed is
	// false, or a pending stand-in for a record the store could not see
	// (see "A record the store cannot see" in the package documentation).
	Existing Record
	// Steps, when Claimed, is the claimed record's checkpoints (see
	// Store.Checkpoint): those of the record taken over (TookOver) or, on
	// a re-send of the caller's own claim, of that claim; nil for a new
	// record. The core resumes an intent from them without another read.
	Steps []byte
}

// CompleteParams are the arguments of Store.Complete.
type CompleteParams struct {
	Scope string
	Key   string
	// Owner is the claim's token. Required: 1 to MaxOwnerLen bytes of
	// valid UTF-8, no NUL.
	Owner   string
	Outcome []byte
	// Retention is how long the completed record lives from completion.
	Retention time.Duration
}

// RenewParams are the arguments of Store.Renew.
type RenewParams struct {
	Scope string
	Key   string
	// Owner is the claim's token. Required: 1 to MaxOwnerLen bytes of
	// valid UTF-8, no NUL.
	Owner string
	// Lease is the new lease, counted from now by the store's clock. The
	// record lives at least until the new lease ends.
	Lease time.Duration
}

// CheckpointParams are the arguments of Store.Checkpoint.
type CheckpointParams struct {
	Scope string
	Key   string
	// Owner is the claim's token. Required: 1 to MaxOwnerLen bytes of
	// valid UTF-8, no NUL.
	Owner string
	// Steps replaces the record's checkpoints: the core sends all of
	// them, the new one included, in a form the store never interprets.
	// Empty removes them.
	Steps []byte
}

// ReleaseParams are the arguments of Store.Release.
type ReleaseParams struct {
	Scope string
	Key   string
	// Owner is the claim's token. Required: 1 to MaxOwnerLen bytes of
	// valid UTF-8, no NUL.
	Owner string
}

// ResolveParams are the arguments of Store.Resolve.
type ResolveParams struct {
	Scope string
	Key   string
	// Fingerprint is checked with FingerprintMatches against a pending
	// record's; empty keeps the stored one. At most MaxFingerprintLen
	// bytes.
	Fingerprint []byte
	// Owner is a token unique to this Resolve call (the core generates
	// one per call). The completed record stores it as its owner, so that
	// a re-send of the same Resolve (same Owner, same Outcome) after a
	// lost reply reports Resolved instead of the record it wrote. An empty
	// Owner disables that recognition: a repeated Resolve then reports the
	// completed record. At most MaxOwnerLen bytes of valid UTF-8, no NUL.
	Owner     string
	Outcome   []byte
	Retention time.Duration
	// OnlyLeased makes Resolve a write fenced by a reconciler's lease, as
	// Complete is by a claim: it stores the outcome only over a held
	// record that p.Owner leased with LeaseHeld and that nobody leased,
	// took over, resolved or deleted since (its lease may have lapsed),
	// with a matching fingerprint. The token of the claim that was held,
	// which took no lease, does not satisfy it. It leaves every other
	// record as it is and reports it (Resolved false, Existing that
	// record): a pending one (a takeover's live claim, whatever its
	// lease), a held one nobody leased or another token leased, a
	// completed one (but a re-send still reports Resolved), and an absent
	// or expired key (Existing the zero Record, State 0), which would be
	// another intent's. With an empty Owner it resolves nothing. A
	// Reconciler sends it with its lease's token, so that a verdict that
	// comes late never lands on the key's next intent. False (the
	// default): see Store.Resolve.
	OnlyLeased bool
}

// ResolveResult is the result of Store.Resolve.
type ResolveResult struct {
	// Resolved reports that the outcome was stored.
	Resolved bool
	// Existing is the record that prevented it when Resolved is false: a
	// completed record, a pending or held one whose fingerprint does not
	// match, a pending one whose lease is live, a held one under another
	// token's live reconciler lease, any record but a held one p.Owner
	// leased, and the zero Record for an absent key (with
	// ResolveParams.OnlyLeased), or a pending stand-in for a record the
	// store could not see (see "A record the store cannot see" in the
	// package documentation).
	Existing Record
}

// Store is the storage contract every backend implements. All methods are
// safe for concurrent use, take the context first and honour its
// cancellation; none keeps the context, or a slice of its parameters,
// after returning. Every byte slice in a Record a method returns is the
// caller's own, to modify at will: a store returns copies, never its own
// bytes.
type Store interface {
	// Claim atomically, in one store round trip, either creates a pending
	// record owned by p.Owner (when the key is absent, its record expired,
	// or its pending lease expired and the fingerprints match) or reports
	// the existing record without modifying it. Exactly one of any number
	// of concurrent Claims on an absent key succeeds.
	Claim(ctx context.Context, p ClaimParams) (ClaimResult, error)

	// Complete stores p.Outcome and marks the record completed if, and only
	// if, it is pending and owned by p.Owner (its lease may have lapsed as
	// long as nobody took it over). It reports whether it did; false means
	// the owner lost the claim and nothing was written.
	//
	// Complete is idempotent: repeating a Complete that applied, with the
	// same owner and outcome, reports true again, so that a retry after a
	// lost reply is not mistaken for a lost lease.
	Complete(ctx context.Context, p CompleteParams) (applied bool, err error)

	// Renew extends the lease of a pending record owned by p.Owner to
	// p.Lease from now (its lease may have lapsed as long as nobody took it
	// over), and the record's life to at least the new lease end. It
	// reports false, writing nothing, when the record is absent, completed
	// or owned by someone else.
	Renew(ctx context.Context, p RenewParams) (applied bool, err error)

	// Release ends the pending record owned by p.Owner (its lease may
	// have lapsed as long as nobody took it over) so that the next Claim
	// succeeds at once. A record without checkpoints is deleted. A record
	// with checkpoints is kept, its lease ended, so that the next Claim
	// with a matching fingerprint takes it over (TookOver) and gets its
	// checkpoints, and one with another fingerprint is refused as for any
	// pending record; it expires as a pending record does, when its
	// retention ends. It reports false, writing nothing, for any other
	// record (including on a re-send of a Release that deleted).
	Release(ctx context.Context, p ReleaseParams) (applied bool, err error)

	// Checkpoint replaces the checkpoints of the pending record owned by
	// p.Owner with p.Steps (its lease may have lapsed as long as nobody
	// took it over), in one write, and reports whether it did; false means
	// the owner lost the claim and nothing was written. It changes nothing
	// else: not the lease, not the expiry. A re-send reports true while
	// the claim is held. A record keeps its checkpoints through Renew, a
	// takeover (Claim returns them), Release (which then keeps the record),
	// Hold, LeaseHeld, Complete and Resolve; they die with the record, and
	// a Claim of an absent or expired key starts with none. A store bound
	// to a transaction (a SQL store's BeginTx) writes them in that
	// transaction, so that they commit with its other writes or not at
	// all.
	Checkpoint(ctx context.Context, p CheckpointParams) (applied bool, err error)

	// Resolve stores an outcome decided out of band (a reconciliation job
	// or an operator) for a key that is absent, pending with a lapsed
	// lease (whoever owns it) or held (see "The held state" in held.go),
	// provided FingerprintMatches(stored, p.Fingerprint). It leaves a
	// pending record whose lease is live (its owner is running now) as it
	// is. Every such decision is taken in the same atomic step as the
	// write, so a claim taken between an earlier read and this Resolve is
	// left too. The completed record keeps the stored fingerprint when
	// p.Fingerprint is empty, and stores p.Owner as its owner. Resolve
	// never overwrites a completed record; it reports Resolved for a
	// completed record that holds p.Owner (non empty) and p.Outcome
	// already: a re-send of a Resolve that applied. With p.OnlyLeased it
	// resolves nothing but a held record p.Owner leased (see
	// ResolveParams.OnlyLeased).
	Resolve(ctx context.Context, p ResolveParams) (ResolveResult, error)

	// Hold turns the pending record owned by p.Owner (its lease may have
	// lapsed as long as nobody took it over) into a held record (see "The
	// held state" in held.go): held since now, until now+p.For, with
	// p.Code and p.Message, living at least until the hold ends and
	// p.Retention from now. It keeps the fingerprint. It reports false,
	// writing nothing, when the record is absent, completed or owned by
	// someone else. A re-send reports true: a held record still owned by
	// p.Owner is left as it is.
	Hold(ctx context.Context, p HoldParams) (applied bool, err error)

	// LeaseHeld gives p.Owner an exclusive lease of p.Lease on a held
	// record when no other reconciler's lease on it is live (a lease by
	// p.Owner itself is extended). The record stays held: its hold, code
	// and message are kept, its owner becomes p.Owner (so the original
	// owner's re-sent Hold reports false), and it lives at least until the
	// lease ends. It reports Existing, writing nothing, for any other
	// record.
	LeaseHeld(ctx context.Context, p LeaseHeldParams) (LeaseHeldResult, error)
}

// Watcher is implemented by stores that can signal a change to a record
// without polling. The core uses it, when present, to wait for a concurrent
// duplicate to finish; it polls with backoff otherwise.
type Watcher interface {
	// Watch returns a channel that is closed after the record of
	// (scope, key) may have changed, and a function that stops watching.
	// Spurious wake-ups are allowed; missed changes are not, for changes
	// made after Watch returned.
	Watch(ctx context.Context, scope, key string) (changed <-chan struct{}, stop func(), err error)
}

// ErrClosed is returned by a backend used after its owner closed it.
var ErrClosed = errors.New("once: store closed")

// FingerprintMatches reports whether a record stored with fingerprint
// stored may be answered to, taken over or resolved by a call with
// fingerprint given. An empty fingerprint on either side disables the
// check (symmetrically); two non-empty ones must be equal, compared in
// constant time. Backends use it (or the same predicate in their query
// language) to decide lease takeovers and resolves.
func FingerprintMatches(stored, given []byte) bool {
	if len(given) == 0 || len(stored) == 0 {
		return true
	}
	return subtle.ConstantTimeCompare(stored, given) == 1
}

// BoundFingerprint returns the fingerprint a record keeps after a write
// (a takeover or a resolve) made with fingerprint given over a record
// stored with fingerprint stored: given when it is non-empty, else stored.
// Call it only when FingerprintMatches(stored, given).
func BoundFingerprint(stored, given []byte) []byte {
	if len(given) == 0 {
		return stored
	}
	return given
}

// Savepointer is implemented by stores bound to a transaction (the store
// a SQL backend's BeginTx returns) that can undo part of it. once.DoTx
// marks the transaction after a claim it wins and, when fn's outcome is
// unknown (a Hold error), undoes fn's writes back to the mark and holds
// the claim in the transaction, so that the key stays held after the
// commit.
type Savepointer interface {
	// Savepoint marks the transaction's current point (an SQL SAVEPOINT),
	// replacing the store's previous mark.
	Savepoint(ctx context.Context) error
	// RollbackToSavepoint undoes every write made in the transaction
	// since the mark, keeping the writes before it and the transaction
	// open and usable, also after a failed statement. It fails when the
	// transaction ended or lost the mark (it was rolled back whole).
	RollbackToSavepoint(ctx context.Context) error
}

// Admin is implemented by stores that support operator tooling (the
// cmd/once CLI): reading and deleting one record regardless of its owner.
// The core never calls it.
type Admin interface {
	// Get returns the live record of (scope, key), its ExpiresIn set, or
	// the zero Record (State 0) when the key is absent or expired. Get
	// takes no lock and writes nothing.
	Get(ctx context.Context, scope, key string) (Record, error)
	// Delete removes the record of (scope, key) whatever its state or
	// owner, so the next call with the key is a new intent. It reports
	// whether a live record existed; a driver's re-send of a Delete that
	// applied reports false (see "Re-sent writes" in the package
	// documentation). A pending owner's later writes are fenced off as
	// after a takeover.
	Delete(ctx context.Context, scope, key string) (deleted bool, err error)
}

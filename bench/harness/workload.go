package harness

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// Path is one of the four answers of once.Do that the benchmark measures.
type Path int

const (
	PathFirst Path = iota
	PathReplay
	PathInProgress
	PathMismatch
	NumPaths
)

var pathNames = [NumPaths]string{"first execution", "replay", "in progress", "mismatch"}

func (p Path) String() string { return pathNames[p] }

// Target is one side of a comparison, the library or its raw baseline, on
// one backend: an operation per path and a counter of the store round
// trips those operations make (library: calls to backends.Store; raw:
// statements or commands sent).
type Target struct {
	Ops   [NumPaths]func(ctx context.Context) error
	Trips atomic.Int64
	// First and Replay are the first execution and the replay paths on a
	// key of the caller's choosing (the peers benchmark's keys): First
	// must execute charge on a fresh key and store its result, Replay must
	// return ThePayment stored under a completed key, bound to FpA, without
	// running charge. Each returns an error on any other answer.
	First, Replay func(ctx context.Context, key string) error
}

// Payment is the value fn returns, the same as the root package's
// BenchmarkDoMemory.
type Payment struct {
	OrderID string `json:"order_id"`
	Status  string `json:"status"`
	Amount  int    `json:"amount"`
}

var ThePayment = Payment{OrderID: "9b1e4d3a", Status: "paid", Amount: 4200}

func Charge(context.Context) (Payment, error) { return ThePayment, nil }

// Fingerprints: FpA binds the hot keys, FpB is the mismatching one.
var (
	FpA = []byte("0123456789abcdef0123456789abcdef")
	FpB = []byte("fedcba9876543210fedcba9876543210")
)

// RawResult is what a hand-written idempotent wrapper of charge does
// before it stores the result: it calls charge and encodes the payment
// (encoding/json, as the library's default codec), since a typed value
// cannot be stored as it is. The library stores the same JSON behind its
// two envelope bytes.
func RawResult(ctx context.Context) ([]byte, error) {
	p, err := Charge(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// RawReplay is what the same wrapper does with a replayed response: it
// decodes the stored JSON into the payment it returns, as once.Do does,
// and checks it.
func RawReplay(body []byte) error {
	var p Payment
	if err := json.Unmarshal(body, &p); err != nil {
		return err
	}
	if p != ThePayment {
		return fmt.Errorf("raw replay: %+v", p)
	}
	return nil
}

// StoredOutcome is exactly what the library stores for ThePayment (its
// envelope: version 1, kind value, then the JSON): the statement-level
// measurements below the table (pgstats.go, pgsplit.go) send it as a
// constant, and the scale runs fill their tables with it.
var StoredOutcome = func() []byte {
	b, err := json.Marshal(ThePayment)
	if err != nil {
		panic(err)
	}
	return append([]byte{1, 1}, b...)
}()

const (
	Lease     = 30 * time.Second // the library's default
	Retention = 10 * time.Minute // short, so leftovers of a killed run expire
	HoldLease = time.Hour        // the in-progress key's lease: outlives any run
)

// The keys of a target's scope: first executions use fresh keys, the
// other paths hit one of two hot keys.
const (
	HotKey     = "hot"     // completed with FpA: replay (FpA) and mismatch (FpB)
	PendingKey = "pending" // claimed with FpA and a long lease: in progress
)

// KeySeq makes the fresh keys of first executions, prefix + "f" + a
// counter. Building the key costs the same allocations (two) per op for
// library and baseline.
type KeySeq struct{ n atomic.Uint64 }

func (s *KeySeq) Next(prefix string) string {
	return prefix + "f" + strconv.FormatUint(s.n.Add(1), 36)
}

// Token is an owner token as the library makes them: 128 random bits in
// 22 characters of unpadded base64url, so that the library's statements
// the benchmark profiles store rows of the library's size. The raw
// baselines make one per claim as well.
func Token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// RunID names this run's schema, key prefix and scopes.
func RunID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

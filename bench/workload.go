package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// path is one of the four answers of once.Do that the benchmark measures.
type path int

const (
	pathFirst path = iota
	pathReplay
	pathInProgress
	pathMismatch
	numPaths
)

var pathNames = [numPaths]string{"first execution", "replay", "in progress", "mismatch"}

func (p path) String() string { return pathNames[p] }

// target is one side of a comparison, the library or its raw baseline, on
// one backend: an operation per path and a counter of the store round
// trips those operations make (library: calls to backends.Store; raw:
// statements or commands sent).
type target struct {
	ops   [numPaths]func(ctx context.Context) error
	trips atomic.Int64
}

// payment is the value fn returns, the same as the root package's
// BenchmarkDoMemory.
type payment struct {
	OrderID string `json:"order_id"`
	Status  string `json:"status"`
	Amount  int    `json:"amount"`
}

var thePayment = payment{OrderID: "9b1e4d3a", Status: "paid", Amount: 4200}

func charge(context.Context) (payment, error) { return thePayment, nil }

// Fingerprints: fpA binds the hot keys, fpB is the mismatching one.
var (
	fpA = []byte("0123456789abcdef0123456789abcdef")
	fpB = []byte("fedcba9876543210fedcba9876543210")
)

// rawResult is what a hand-written idempotent wrapper of charge does
// before it stores the result: it calls charge and encodes the payment
// (encoding/json, as the library's default codec), since a typed value
// cannot be stored as it is. The library stores the same JSON behind its
// two envelope bytes.
func rawResult(ctx context.Context) ([]byte, error) {
	p, err := charge(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// rawReplay is what the same wrapper does with a replayed response: it
// decodes the stored JSON into the payment it returns, as once.Do does,
// and checks it.
func rawReplay(body []byte) error {
	var p payment
	if err := json.Unmarshal(body, &p); err != nil {
		return err
	}
	if p != thePayment {
		return fmt.Errorf("raw replay: %+v", p)
	}
	return nil
}

// storedOutcome is exactly what the library stores for thePayment (its
// envelope: version 1, kind value, then the JSON): the statement-level
// measurements below the table (pgstats.go, pgsplit.go) send it as a
// constant, and the scale runs fill their tables with it.
var storedOutcome = func() []byte {
	b, err := json.Marshal(thePayment)
	if err != nil {
		panic(err)
	}
	return append([]byte{1, 1}, b...)
}()

const (
	lease     = 30 * time.Second // the library's default
	retention = 10 * time.Minute // short, so leftovers of a killed run expire
	holdLease = time.Hour        // the in-progress key's lease: outlives any run
)

// The keys of a target's scope: first executions use fresh keys, the
// other paths hit one of two hot keys.
const (
	hotKey     = "hot"     // completed with fpA: replay (fpA) and mismatch (fpB)
	pendingKey = "pending" // claimed with fpA and a long lease: in progress
)

// keySeq makes the fresh keys of first executions, prefix + "f" + a
// counter. Building the key costs the same allocations (two) per op for
// library and baseline.
type keySeq struct{ n atomic.Uint64 }

func (s *keySeq) next(prefix string) string {
	return prefix + "f" + strconv.FormatUint(s.n.Add(1), 36)
}

// token is an owner token as the library makes them: 128 random bits in
// hex. The raw baselines make one per claim as well.
func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// runID names this run's schema, key prefix and scopes.
func runID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

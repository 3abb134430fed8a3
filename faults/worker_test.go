package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/stagedoor/once"
)

// workerConfig is handed to a worker process in ONCE_FAULT_CONFIG.
type workerConfig struct {
	ID          string    `json:"id"`
	Store       storeSpec `json:"store"`
	LedgerURL   string    `json:"ledger_url"`
	LedgerTable string    `json:"ledger_table"`
	Mode        string    `json:"mode"`
	Scope       string    `json:"scope"`
	Keys        []string  `json:"keys"`
	LeaseMS     int64     `json:"lease_ms"`
	PerCallMS   int64     `json:"per_call_ms"`
	DeadlineMS  int64     `json:"deadline_ms"`
	Fail        failpoint `json:"fail"`
	// Role is "" (a client calling Do, fn's effect its answer),
	// roleHeldOwner or roleReconciler (see held_worker_test.go), or
	// roleSteps (steps_worker_test.go).
	Role             string `json:"role,omitempty"`
	HoldMS           int64  `json:"hold_ms,omitempty"`
	ReconcileLeaseMS int64  `json:"reconcile_lease_ms,omitempty"`
	// OrdersTable is the table of a steps worker's order rows, in the
	// records' SQL database.
	OrdersTable string `json:"orders_table,omitempty"`
}

const configEnv = "ONCE_FAULT_CONFIG"

// workerMain is the worker process: it runs the keys of its config through
// Do and writes one JSON event per line to stdout. Exit 0 when every key
// got an answer, 3 when some did not by the deadline, 2 on a set-up error.
func workerMain() int {
	out := &lineWriter{w: os.Stdout}
	var cfg workerConfig
	if err := json.Unmarshal([]byte(os.Getenv(configEnv)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker: bad config:", err)
		return 2
	}
	ctx := context.Background()
	st, err := cfg.Store.open(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker: store:", err)
		return 2
	}
	defer st.close()
	lpool, err := newPool(ctx, cfg.LedgerURL, "once_fault_ledger", 2)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker: ledger:", err)
		return 2
	}
	defer lpool.Close()
	l := openLedger(lpool, cfg.LedgerTable, cfg.Mode)

	pid := os.Getpid()
	var trig *trigger
	if cfg.Fail.Point != "" {
		trig = &trigger{fp: cfg.Fail, emit: out.emit, self: cfg.ID}
	}
	hooked := hookedStore{Store: st.store, trig: trig}
	opts := []once.Option{once.WithLease(time.Duration(cfg.LeaseMS) * time.Millisecond), once.WithHoldFor(time.Duration(cfg.HoldMS) * time.Millisecond)}
	if cfg.Role == roleReconciler {
		return reconcilerMain(cfg, hooked, opts, l, out.emit, pid)
	}
	scope := once.New(hooked, opts...).Scope(cfg.Scope)
	call := plainCall(scope, l, trig, cfg.ID, pid)
	switch {
	case cfg.Role == roleHeldOwner:
		call = heldCall(scope, l, trig, cfg.ID, pid)
	case cfg.Role == roleSteps:
		call = stepsCall(scope, st, l, cfg.OrdersTable, trig, cfg.ID, pid)
	case cfg.Mode == modeTx:
		call = txCall(st.pg, scope, l, trig, cfg.ID, pid)
	}
	r := &runner{
		id: cfg.ID, keys: cfg.Keys, call: call, trig: trig, emit: out.emit, pid: pid,
		perCall:  time.Duration(cfg.PerCallMS) * time.Millisecond,
		deadline: time.Now().Add(time.Duration(cfg.DeadlineMS) * time.Millisecond),
	}
	if r.run() > 0 {
		return 3
	}
	return 0
}

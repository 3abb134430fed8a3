package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

// heldSpec makes a scenario's workers held owners (roleHeldOwner: the
// provider's first answer for each key is lost, so every key is held
// once) and runs reconciler processes (roleReconciler) beside them, each
// with one of Fails, plus one with none. A reconciler that dies is
// replaced; they get SIGTERM once every owner is done.
type heldSpec struct {
	Hold  time.Duration
	Fails []failpoint
	// RandomKills are SIGKILLs of a running reconciler at random times.
	RandomKills int
}

// reconcilers starts the reconciler processes of h.
func (h *heldSpec) reconcilers(t *testing.T, prof profile, base workerConfig, elapse func(time.Duration)) *cluster {
	base.Role = roleReconciler
	p := prof
	p.Workers = len(h.Fails) + 1
	rc := newCluster(t, p, base, h.Fails, h.RandomKills+2)
	rc.who, rc.elapse = "a reconciler", elapse
	rc.start()
	for i := range h.RandomKills {
		time.AfterFunc(time.Duration(400+300*i)*time.Millisecond, func() { rc.killRandom() })
	}
	return rc
}

// heldFaults are the failpoints of a held scenario: owners killed and
// stopped between Hold and Do's return, reconcilers killed and stopped
// mid-pass (with a key leased, before and after the verdict's Resolve).
func heldFaults() (owners, reconcilers []failpoint) {
	at := func(p, a string) failpoint { return failpoint{Point: p, Action: a, At: 1 + rand.IntN(3)} }
	owners = []failpoint{at(pointHoldBefore, actionKill), at(pointHoldAfter, actionKill), at(pointHoldBefore, actionStop)}
	reconcilers = []failpoint{
		at(pointLookup, actionKill), at(pointResolveBefore, actionKill), at(pointResolveAfter, actionKill),
		at(pointResolveBefore, actionStop),
	}
	return owners, reconcilers
}

// checkHeld applies the invariants of held keys that check does not:
// a verdict is stored at most once per key, and never over another claim
// than the held one it was asked for. Every key is held by the provider's
// first call alone, so a later call (a takeover's fn, after a hold ended)
// means the held claim was gone: a verdict stored then landed on another
// intent's claim, or over its completion.
func checkHeld(keys []string, acks []event, effects map[string][]effect, rereads map[string]reread) []string {
	var bad []string
	verdicts := map[string]int{}
	for _, a := range acks {
		if a.Verdict {
			verdicts[a.Key]++
		}
	}
	for _, key := range keys {
		if n := verdicts[key]; n > 1 {
			bad = append(bad, fmt.Sprintf("key %s: %d verdicts stored", key, n))
		}
		rr := rereads[key]
		if !strings.HasPrefix(rr.Value, verdictPrefix) {
			continue
		}
		for _, e := range effects[key] {
			if e.Attempts > 1 {
				bad = append(bad, fmt.Sprintf("key %s: verdict %q stored, yet the provider got %d calls: a later claim ran fn", key, rr.Value, e.Attempts))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// heldKeysPerRun is the number of keys of each held run.
const heldKeysPerRun = 100

// heldKeys runs the held-key scenario on backend.
func heldKeys(t *testing.T, backend string, pg *pgServer, chaos func(context.Context, *env)) {
	owners, reconcilers := heldFaults()
	runScenario(t, scenario{
		Name: "held keys: owners and reconcilers killed and stopped", Backend: backend, Mode: modeFenced,
		Keys: heldKeysPerRun, Workers: len(owners), Fails: owners, RandomKills: 1, Chaos: chaos, PG: pg, Proxy: backend == "mysql",
		Held: &heldSpec{Hold: time.Second, Fails: reconcilers, RandomKills: 1},
	})
}

// afterVerdicts waits until the reconcilers stored n verdicts, so that a
// fault lands during their passes, with keys still held.
func afterVerdicts(ctx context.Context, e *env, n int) bool {
	for ctx.Err() == nil {
		e.rc.mu.Lock()
		got := len(e.rc.acks)
		e.rc.mu.Unlock()
		if got >= n {
			return true
		}
		sleepCtx(ctx, 5*time.Millisecond)
	}
	return false
}

// TestHeldKeys runs owners that hold their keys and reconcilers that
// settle them, as separate processes on one store, with kill -9 and
// SIGSTOP of both at the points heldFaults lists, a random kill of each
// kind, and the store restarted (its connections cut, for MariaDB)
// during the reconcilers' passes (and, on the memory store, the in-process
// form: heldKeysInProcess). PostgreSQL's records are on a server of
// the suite's own, which it kills and restarts; its initdb runs while the
// other stores' runs do. The stores run in parallel: most of a run is
// waiting for leases and processes.
func TestHeldKeys(t *testing.T) {
	// PostgreSQL's data directory is made while the other stores run.
	type template struct {
		data string
		err  error
	}
	pgTemplate := make(chan template, 1)
	pg := findPgPrograms(t)
	dir := pg.tempDir(t)
	go func() {
		data, err := pg.initdbIn(dir)
		pgTemplate <- template{data, err}
	}()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		heldKeysInProcess(t)
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		heldKeys(t, "sqlite", nil, nil)
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		heldKeys(t, "redis", nil, func(ctx context.Context, e *env) {
			for i := 1; i <= 2 && afterVerdicts(ctx, e, 15*i); i++ {
				if err := e.redis.restart(); err != nil {
					e.c.t.Errorf("redis restart: %v", err)
					return
				}
				e.c.inject("Redis kill -9 + restart during a reconciler pass")
			}
		})
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		heldKeys(t, "mysql", nil, func(ctx context.Context, e *env) {
			for i := 1; i <= 2 && afterVerdicts(ctx, e, 15*i); i++ {
				pulse(ctx, e, "TCP reset during a reconciler pass", "reset_peer", "upstream", map[string]any{"timeout": 0}, 80*time.Millisecond)
				pulse(ctx, e, "connections blackholed during a reconciler pass", "timeout", "upstream", map[string]any{"timeout": 100}, 300*time.Millisecond)
			}
		})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		tpl := <-pgTemplate
		if tpl.err != nil {
			t.Fatal(tpl.err)
		}
		heldKeys(t, "postgres", startPgServer(t, pg, tpl.data), func(ctx context.Context, e *env) {
			for i := 1; i <= 2 && afterVerdicts(ctx, e, 15*i); i++ {
				if err := e.pg.restart(); err != nil {
					e.c.t.Errorf("postgres restart: %v", err)
					return
				}
				e.c.inject("PostgreSQL kill -9 + restart during a reconciler pass")
			}
		})
	})
}

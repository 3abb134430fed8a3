package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stagedoor/once/backends"
)

// stepsBoundaries are the failpoints of TestSteps on backend: every step
// boundary of stepsFn, then inside Complete. order-commit exists only
// where the order step is a StepTx (the SQL stores).
func stepsBoundaries(backend string) []string {
	ps := []string{
		pointChargeBefore, pointChargeEffect, pointChargeCheckpoint,
		pointShipEffect, pointShipCheckpoint,
		pointNotifyBefore, pointNotifyEffect, pointNotifyCheckpoint,
		pointOrderEffect,
	}
	if backend != "redis" {
		ps = append(ps, pointOrderCommit)
	}
	return append(ps, pointCompleteBefore, pointCompleteAfter)
}

// stepsKills is kills SIGKILLs at each boundary, in random order, each in
// one of a worker's first few executions.
func stepsKills(backend string, kills int) []failpoint {
	var fs []failpoint
	for range kills {
		for _, p := range stepsBoundaries(backend) {
			fs = append(fs, failpoint{Point: p, Action: actionKill, At: 1 + rand.IntN(3)})
		}
	}
	rand.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	return fs
}

// stepsSize is the keys and kills per boundary of a TestSteps run:
// -faults.steps-keys and -faults.steps-kills, or the long profile's.
func stepsSize() (keys, kills int) {
	keys, kills = *flagStepsKeys, *flagStepsKills
	if currentProfile().Name == "long" {
		keys, kills = max(keys, 400), max(kills, 3)
	}
	return keys, kills
}

// TestSteps runs the intent of three steps (stepsFn) in worker processes
// killed with SIGKILL at every step boundary (stepsBoundaries), each
// key's intent then resumed by a fresh worker, on every store that
// survives a process: PostgreSQL, Redis, MariaDB and SQLite. checkSteps
// applies the invariants of steps.
func TestSteps(t *testing.T) {
	keys, kills := stepsSize()
	for _, backend := range []string{"postgres", "redis", "mysql", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			runScenario(t, scenario{
				Name: "steps: kill -9 at every step boundary", Backend: backend, Mode: modeFenced, Steps: true,
				Keys: keys, Fails: stepsKills(backend, kills),
			})
		})
	}
}

// ordersColumns is the order rows' table; no constraint, so that a row
// written twice shows.
const ordersColumns = "(intent VARCHAR(255) NOT NULL, val VARCHAR(255) NOT NULL, worker VARCHAR(64) NOT NULL, pid INT NOT NULL)"

// createOrders creates the table of order rows in the records' database
// through st's BeginTx, and returns its name ("" on Redis: no table).
func createOrders(t *testing.T, st *openedStore, sfx string) string {
	t.Helper()
	if beginOrders(st, nil, "") == nil {
		return ""
	}
	table := "faults_orders_" + sfx
	inTx := func(q string) error {
		ctx := context.Background()
		tx, _, err := beginOrders(st, nil, "")(ctx)
		if err != nil {
			return err
		}
		if err := tx.exec(ctx, q); err != nil {
			_ = tx.Rollback(ctx)
			return err
		}
		return tx.Commit(ctx)
	}
	if err := inTx("CREATE TABLE " + table + " " + ordersColumns); err != nil {
		t.Fatalf("orders table: %v", err)
	}
	t.Cleanup(func() { _ = inTx("DROP TABLE " + table) })
	return table
}

// stepsState is what the stores hold after a steps run.
type stepsState struct {
	// Orders are the order rows' values by key (nil on Redis).
	Orders map[string][]string
	// Records are the keys' records (Admin.Get).
	Records map[string]backends.Record
}

// readSteps reads the order rows and every key's record.
func readSteps(t *testing.T, st *openedStore, scope, table string, keys []string) stepsState {
	t.Helper()
	ctx := context.Background()
	var s stepsState
	if table != "" {
		tx, _, err := beginOrders(st, nil, "")(ctx)
		if err != nil {
			t.Fatalf("orders: %v", err)
		}
		s.Orders, err = tx.orders(ctx, table)
		_ = tx.Rollback(ctx)
		if err != nil {
			t.Fatalf("orders: %v", err)
		}
	}
	admin, ok := backends.As[backends.Admin](st.store)
	if !ok {
		t.Fatalf("%T is not a backends.Admin", st.store)
	}
	s.Records = make(map[string]backends.Record, len(keys))
	for _, key := range keys {
		rec, err := admin.Get(ctx, scope, key)
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		s.Records[key] = rec
	}
	return s
}

// stepFigures counts one step's effects over a run.
type stepFigures struct {
	Raw, Deduped int // calls that reached the effect; distinct effects (derived keys, or rows)
	Twice        int // keys whose effect was made (raw) more than once
	MaxRaw       int
}

func (f *stepFigures) add(raw, deduped int) {
	f.Raw += raw
	f.Deduped += deduped
	f.MaxRaw = max(f.MaxRaw, raw)
	if raw > 1 {
		f.Twice++
	}
}

// checkSteps applies the invariants of a steps run, key by key:
//
//   - each Step's effect (charge, ship; order on Redis) is made once by
//     its derived key (one row in the fenced ledger), and called at most
//     once more for each kill of a worker between that step's effect and
//     its checkpoint and each lease loss or unrecorded write reported for
//     the key;
//   - a StepTx's order row is written exactly once (none on a held key);
//   - the at-most-once notify is called at most once, and a kill inside
//     it (after its started mark, before its checkpoint) leaves the key
//     held with code once_step_interrupted naming the step, and nothing
//     else does;
//   - every key ends completed (or held, as above), every acknowledged
//     answer is the same, names the effects the ledger and the order rows
//     hold, and is replayed unchanged; no key is stuck.
func checkSteps(t *testing.T, backend string, o observation, s stepsState) verdict {
	var v verdict
	bad := func(format string, args ...any) { v.Violations = append(v.Violations, fmt.Sprintf(format, args...)) }
	killed := map[string]map[string]int{} // key -> point -> kills
	for _, f := range o.Faults {
		if killed[f.Key] == nil {
			killed[f.Key] = map[string]int{}
		}
		killed[f.Key][f.Point]++
	}
	reported := map[string]int{} // key -> lease losses and unrecorded writes reported
	for _, e := range append(append([]event(nil), o.LeaseLost...), o.Unrecorded...) {
		reported[e.Key]++
	}
	acked := ackedValues(o.Acks)
	figs := map[string]*stepFigures{"charge": {}, "ship": {}, "notify": {}, "order": {}}
	held, amoKeys := 0, 0
	keys := append([]string(nil), o.Keys...)
	sort.Strings(keys)
	for _, key := range keys {
		amo := stepsAtMostOnce(key)
		if amo {
			amoKeys++
		}
		rec := s.Records[key]
		isHeld := rec.State == backends.StateHeld
		interrupted := killed[key][pointNotifyBefore] + killed[key][pointNotifyEffect]
		switch {
		case isHeld:
			held++
			if !amo || interrupted+reported[key] == 0 {
				bad("key %s: held (%q), with no at-most-once step interrupted", key, rec.Held.Code)
			}
			if rec.Held.Code != "once_step_interrupted" || !strings.Contains(rec.Held.Message, `"notify"`) {
				bad("key %s: held with code %q, message %q", key, rec.Held.Code, rec.Held.Message)
			}
		case rec.State != backends.StateCompleted:
			bad("key %s: ends in state %v, neither completed nor held", key, rec.State)
		case interrupted > 0:
			bad("key %s: completed, although a worker died inside its at-most-once step", key)
		}

		// The provider's steps: one effect per derived key, a call more
		// per crash in the step's window.
		values := map[string]string{}
		ledgerStep := func(step string, window int) {
			rows := o.Effects[stepKey(step, key)]
			raw := 0
			for _, e := range rows {
				raw += e.Attempts
				values[step] = e.Value
			}
			figs[step].add(raw, len(rows))
			v.MaxEffects = max(v.MaxEffects, len(rows))
			v.MaxAttempts = max(v.MaxAttempts, raw)
			if raw > 1 {
				v.DupKeys++
				v.AllowedDups = append(v.AllowedDups, fmt.Sprintf("key %s: %s called %d times", key, step, raw))
			}
			if raw > 1+window {
				bad("key %s: %s called %d times (allowed %d)", key, step, raw, 1+window)
			}
			if len(rows) > 1 {
				bad("key %s: %s made %d times under one derived key", key, step, len(rows))
			}
		}
		ledgerStep("charge", killed[key][pointChargeEffect]+reported[key])
		if rows := o.Effects[stepKey("charge", key)]; len(rows) != 1 {
			bad("key %s: %d charges", key, len(rows))
		}
		second := "ship"
		if amo {
			second = "notify"
			ledgerStep("notify", 0)
		} else {
			ledgerStep("ship", killed[key][pointShipEffect]+reported[key])
		}
		if !isHeld && len(o.Effects[stepKey(second, key)]) != 1 {
			bad("key %s: completed with %d %s effects", key, len(o.Effects[stepKey(second, key)]), second)
		}
		wantOrders := 1
		if isHeld {
			wantOrders = 0
		}
		if s.Orders != nil {
			rows := s.Orders[key]
			figs["order"].add(len(rows), min(len(rows), 1))
			if len(rows) > 0 {
				values["order"] = rows[0]
			}
			v.MaxEffects = max(v.MaxEffects, len(rows))
			if len(rows) != wantOrders {
				bad("key %s: %d order rows written by StepTx (want %d)", key, len(rows), wantOrders)
			}
		} else {
			ledgerStep("order", killed[key][pointOrderEffect]+reported[key])
			if n := len(o.Effects[stepKey("order", key)]); n != wantOrders {
				bad("key %s: %d orders (want %d)", key, n, wantOrders)
			}
		}
		checkAnswer(o, key, acked[key], func(first string) string {
			if isHeld {
				if first != stepsHeld {
					return "but the key is held"
				}
				return ""
			}
			if want := values["charge"] + " " + values[second] + " " + values["order"]; first != want {
				return fmt.Sprintf("but the effects are %q", want)
			}
			return ""
		}, &v, bad)
		if len(acked[key]) == 0 {
			bad("key %s: never answered", key)
		}
	}
	checkStuck(o, &v, bad)
	summary.note("steps on %s (%d keys, %d with the at-most-once step): charge %s; ship %s; notify %s; order %s; held keys %d; violations %d",
		backend, len(keys), amoKeys, figs["charge"], figs["ship"], figs["notify"], figs["order"], held, len(v.Violations))
	t.Logf("steps on %s: %d keys (%d at-most-once), held %d\n| step | calls (raw) | effects (deduplicated) | keys called twice | max calls/key |\n|---|---|---|---|---|\n%s%s%s%s",
		backend, len(keys), amoKeys, held, figs["charge"].row("charge"), figs["ship"].row("ship"), figs["notify"].row("notify (StepAtMostOnce)"), figs["order"].row(orderStepName(backend)))
	return v
}

func (f *stepFigures) String() string {
	return fmt.Sprintf("%d calls, %d effects, %d keys called twice", f.Raw, f.Deduped, f.Twice)
}

func (f *stepFigures) row(name string) string {
	return fmt.Sprintf("| %s | %d | %d | %d | %d |\n", name, f.Raw, f.Deduped, f.Twice, f.MaxRaw)
}

// orderStepName names the order step of backend's intent.
func orderStepName(backend string) string {
	if backend == "redis" {
		return "order (Step)"
	}
	return "order (StepTx row)"
}

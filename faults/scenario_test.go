package faults

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/internal/testservers"
)

// scenario is one multi-process run.
type scenario struct {
	Name    string
	Backend string // "postgres", "redis", "mysql" or "sqlite"
	Mode    string // modeRaw, modeFenced, modeTx
	// Fails are handed to the spawned workers in order, one each.
	Fails []failpoint
	// RandomKills are SIGKILLs sent by the driver at random times.
	RandomKills int
	// Proxy puts the workers' store connections behind a toxiproxy.
	Proxy bool
	// ClaimOrder: a MariaDB store's claim order (see storeSpec).
	ClaimOrder string
	// Chaos runs during the run, until the workers are done.
	Chaos func(ctx context.Context, e *env)
	// Keys and Workers, when not zero, replace the profile's.
	Keys, Workers int
	// Held makes the workers held owners and runs reconcilers beside
	// them (see held_test.go).
	Held *heldSpec
	// Steps makes the workers run an intent of three steps (roleSteps,
	// see steps_test.go), checked by checkSteps.
	Steps bool
	// PG, for Backend "postgres", keeps the records on this server of the
	// suite's own instead of the shared one.
	PG *pgServer
}

// env is what a scenario's chaos can act on.
type env struct {
	c       *cluster
	proxy   *netProxy
	redis   *redisServer
	pool    *pgxpool.Pool // the driver's own, direct
	appName string
	pg      *pgServer // the records' own PostgreSQL server, if any
	rc      *cluster  // the reconcilers of a held scenario
}

// runScenario runs sc and checks the invariants. It returns the verdict.
func runScenario(t *testing.T, sc scenario) verdict {
	t.Helper()
	prof := currentProfile()
	if sc.Keys > 0 {
		prof.Keys = sc.Keys
	}
	if sc.Workers > 0 {
		prof.Workers = sc.Workers
	}
	start := time.Now()
	ctx := context.Background()
	pool := testservers.Pool(t) // the ledger, and the records on PostgreSQL
	sfx := testservers.Suffix()
	e := &env{pool: pool, appName: "once_fault_" + sfx, pg: sc.PG}

	l, err := createLedger(ctx, pool, "faults_ledger_"+sfx, sc.Mode)
	if err != nil {
		t.Fatalf("ledger: %v", err)
	}
	t.Cleanup(func() { l.drop(context.Background()) })

	direct := storeSpec{Backend: sc.Backend, AppName: e.appName + "_driver", LockTimeoutMS: 300, ClaimOrder: sc.ClaimOrder}
	switch sc.Backend {
	case "postgres":
		direct.Table = "faults_rec_" + sfx
		direct.Addr = testservers.PostgresURL()
		cfg := &postgres.Config{Table: direct.Table}
		if sc.PG != nil {
			direct.Addr = sc.PG.url()
			own, err := newPool(ctx, direct.Addr, "", 2)
			if err == nil {
				err = testservers.MigratePostgres(ctx, own, cfg)
				own.Close()
			}
			if err != nil {
				t.Fatalf("migrate: %v", err)
			}
			break
		}
		if err := testservers.MigratePostgres(ctx, pool, cfg); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		t.Cleanup(func() {
			for _, tb := range []string{cfg.Table, cfg.Table + "_migrations"} {
				_, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{tb}.Sanitize())
			}
		})
	case "redis":
		e.redis = startRedis(t)
		direct.Addr = e.redis.addr()
		direct.Prefix = "faults:" + sfx + ":"
	case "mysql":
		direct.Addr, direct.Table = mysqlDSN(), migrateMySQL(t, "faults_rec_")
	case "sqlite":
		if sc.Proxy {
			t.Fatal("sqlite: no network to proxy")
		}
		direct.Addr = sqliteFile(t)
	}
	workers := direct
	workers.AppName = e.appName
	if sc.Proxy {
		upstream := direct.Addr
		switch sc.Backend {
		case "postgres":
			upstream = pgHostPort(t, direct.Addr)
		case "mysql":
			upstream = mysqlHostPort(t, direct.Addr)
		}
		e.proxy = newProxy(t, upstream)
		workers.Addr = e.proxy.addr()
		switch sc.Backend {
		case "postgres":
			workers.Addr = pgWithHost(t, direct.Addr, e.proxy.addr())
		case "mysql":
			workers.Addr = mysqlWithAddr(t, direct.Addr, e.proxy.addr())
		}
	}

	keys := make([]string, prof.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%05d-%s", i, sfx[:4])
	}
	base := workerConfig{
		Store: workers, LedgerURL: testservers.PostgresURL(), LedgerTable: l.table, Mode: sc.Mode,
		Scope: "faults", Keys: keys, LeaseMS: prof.Lease.Milliseconds(), PerCallMS: 5000,
		DeadlineMS: prof.Deadline.Milliseconds(),
	}
	// The driver's own store: the store's clock, and the checks after the
	// run.
	st, err := direct.open(ctx)
	if err != nil {
		t.Fatalf("direct store: %v", err)
	}
	defer st.close()
	storeElapse := func(d time.Duration) {
		wctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
		defer cancel()
		if err := elapse(wctx, st.store, d); err != nil {
			t.Errorf("waiting %v on the store's clock: %v", d, err)
		}
	}
	if sc.Backend == "sqlite" {
		// The store's clock is this machine's, and a worker stopped inside
		// a write transaction holds the file's lock (every process waits
		// for it) until it is resumed: a claim could not tell the time.
		storeElapse = func(d time.Duration) { time.Sleep(d) }
	}
	var hold time.Duration
	scopeHold := hold
	if sc.Held != nil {
		hold, scopeHold = sc.Held.Hold, sc.Held.Hold
		base.Role, base.HoldMS, base.ReconcileLeaseMS = roleHeldOwner, hold.Milliseconds(), prof.Lease.Milliseconds()
	}
	if sc.Steps {
		// A key held by an interrupted step stays held until resolved:
		// nothing runs it again.
		scopeHold = once.HoldUntilResolved
		base.Role, base.HoldMS, base.OrdersTable = roleSteps, scopeHold.Milliseconds(), createOrders(t, st, sfx)
	}
	c := newCluster(t, prof, base, sc.Fails, sc.RandomKills+2)
	c.elapse = storeElapse
	e.c = c
	if sc.Held != nil {
		e.rc = sc.Held.reconcilers(t, prof, base, storeElapse)
	}
	c.start()

	chaosCtx, stopChaos := context.WithCancel(ctx)
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		for i := 0; i < sc.RandomKills && chaosCtx.Err() == nil; i++ {
			sleepCtx(chaosCtx, time.Duration(300+i*400)*time.Millisecond)
			c.killRandom()
		}
		if sc.Chaos != nil {
			sc.Chaos(chaosCtx, e)
		}
	}()
	c.wait(prof.Deadline + 30*time.Second)
	stopChaos()
	<-chaosDone
	if e.rc != nil {
		e.rc.terminate()
		e.rc.wait(30 * time.Second)
		c.merge(e.rc)
	}
	if e.proxy != nil {
		e.proxy.reset()
	}
	for _, x := range c.exits {
		t.Errorf("worker exit: %s", x)
	}

	// Past (hold +) lease + slack after the last fault, by the store's
	// clock, every key must be completed or claimable: the recovery
	// client's first call may not be told "in progress".
	c.mu.Lock()
	quiet := time.Until(c.lastFault.Add(hold + prof.Lease + prof.Slack))
	c.mu.Unlock()
	if quiet > 0 {
		storeElapse(quiet)
	}
	scope := once.New(st.store, once.WithLease(prof.Lease), once.WithHoldFor(scopeHold)).Scope(base.Scope)
	call := plainCall(scope, l, nil, "recovery", 0)
	switch {
	case sc.Held != nil:
		call = heldCall(scope, l, nil, "recovery", 0)
	case sc.Steps:
		call = stepsCall(scope, st, l, base.OrdersTable, nil, "recovery", 0)
	case sc.Mode == modeTx:
		call = txCall(st.pg, scope, l, nil, "recovery", 0)
	}
	var stuck []string
	for _, key := range keys {
		for attempt := 0; ; attempt++ {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			v, replayed, err := call(cctx, key)
			cancel()
			if err == nil {
				c.acks = append(c.acks, event{Ev: "ack", Key: key, Value: v, Worker: "recovery", Replayed: replayed})
				break
			}
			if attempt == 0 && errors.Is(err, once.ErrInProgress) {
				stuck = append(stuck, key)
			}
			if attempt > 100 {
				t.Errorf("recovery: key %s: %v", key, err)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Re-read every acknowledged key: it must replay the acknowledged value.
	rereads := map[string]reread{}
	for _, key := range keys {
		ran := false
		out, err := once.DoOutcome(ctx, scope, key, nil, func(context.Context) (string, error) { ran = true; return "re-read ran fn", nil })
		rr := reread{Replayed: out.Status == once.Replayed && !ran, Value: out.Value}
		if sc.Steps && isHeld(err) {
			rr.Replayed, rr.Value, err = !ran, stepsHeld, nil
		}
		if err != nil {
			rr.Err = err.Error()
		}
		rereads[key] = rr
	}

	effects, err := l.effects(ctx)
	if err != nil {
		t.Fatalf("ledger: %v", err)
	}
	obs := observation{Mode: sc.Mode, Keys: keys, Acks: c.acks, Faults: c.faults, LeaseLost: c.leaseLost, Unrecorded: c.unrecorded, Effects: effects, Rereads: rereads, Stuck: stuck}
	var v verdict
	if sc.Steps {
		v = checkSteps(t, sc.Backend, obs, readSteps(t, st, base.Scope, base.OrdersTable, keys))
	} else {
		v = check(obs)
	}
	fails := len(sc.Fails)
	if sc.Held != nil {
		fails += len(sc.Held.Fails)
		v.Violations = append(v.Violations, checkHeld(keys, c.acks, effects, rereads)...)
	}
	if fired := len(c.faults); fired < fails {
		t.Errorf("only %d of %d failpoints fired", fired, fails)
	}
	row := summaryRow{
		Scenario: sc.Name, Backend: sc.Backend, Mode: sc.Mode, Keys: len(keys), Procs: c.spawned,
		Faults: c.injected, Errors: c.errKinds, V: v, Took: time.Since(start),
	}
	summary.add(row)
	t.Log("\n" + row.String())
	for _, d := range v.AllowedDups {
		t.Logf("allowed duplicate (a crash between an effect and its record, or a lease loss reported to the worker): %s", d)
	}
	for i, msg := range v.Violations {
		if i == 20 {
			t.Errorf("… %d more violations", len(v.Violations)-20)
			break
		}
		t.Errorf("violation: %s", msg)
	}
	return v
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// pgHostPort is the host:port of a PostgreSQL URL.
func pgHostPort(t testing.TB, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("ONCE_POSTGRES_URL: %v", err)
	}
	h := u.Host
	if !strings.Contains(h, ":") {
		h += ":5432"
	}
	return h
}

// pgWithHost replaces the host:port of a PostgreSQL URL.
func pgWithHost(t testing.TB, raw, hostPort string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("ONCE_POSTGRES_URL: %v", err)
	}
	u.Host = hostPort
	return u.String()
}

// kindsOf lists the keys of m in order, for logs.
func kindsOf(m map[string]int) string {
	ks := make([]string, 0, len(m))
	for k, n := range m {
		ks = append(ks, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

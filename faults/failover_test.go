package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/internal/testservers"
)

// replication is one way the primary replicates to its standby.
type replication struct {
	Name string
	// Settings are the primary's (see startPgPair).
	Settings []string
	// Durable: every acknowledged commit is on the standby, so no
	// acknowledged outcome may be lost and fn may run twice for a key only
	// after Do reported the outcome unrecorded or the lease lost.
	Durable bool
}

var replications = []replication{
	{Name: "asynchronous"},
	{Name: "synchronous standby, synchronous_commit=on", Settings: []string{"synchronous_standby_names=" + replicaName, "synchronous_commit=on"}, Durable: true},
	{Name: "synchronous standby, synchronous_commit=remote_apply", Settings: []string{"synchronous_standby_names=" + replicaName, "synchronous_commit=remote_apply"}, Durable: true},
}

// failoverLinkDelay delays the replication stream, as a standby in another
// zone is behind; the link is cut when the primary is killed, so what the
// standby had not received by then is lost, as in a crash of the primary's
// host or a partition followed by a failover.
const failoverLinkDelay = 20 * time.Millisecond

// failoverClients is the number of goroutines calling Do.
const failoverClients = 8

// TestPostgresFailover measures what a failover of the primary does to
// acknowledged outcomes. Clients call Do twice per key (a request and its
// duplicate, sent together) with a raw effect in an in-process ledger,
// through a pool on both servers with target_session_attrs=read-write. A
// third of the way through, the replication link is cut and the primary
// killed (SIGKILL to the postmaster and all its processes), the standby
// promoted (pg_ctl promote); the clients go on, reconnecting to it. Past
// lease + slack after the promotion, on the new primary's clock, each key
// is called once more: an acknowledged outcome is lost when that call
// does not replay it (it runs fn, or replays another value).
//
// With a synchronous standby nothing acknowledged may be lost and fn may
// run twice only where Do reported it; asynchronous replication may lose
// outcomes, which are counted, not failed. No key may be stuck in any mode.
func TestPostgresFailover(t *testing.T) {
	pg := findPgPrograms(t)
	template := pg.initdb(t)
	for _, r := range replications {
		t.Run(r.Name, func(t *testing.T) { runFailover(t, pg, template, r) })
	}
}

func runFailover(t *testing.T, pg pgPrograms, template string, r replication) {
	prof := currentProfile()
	start := time.Now()
	ctx := context.Background()
	pair := startPgPair(t, pg, template, r.Settings)
	at := func(what string) { t.Logf("%.2fs: %s", time.Since(start).Seconds(), what) }
	at("primary and standby streaming")

	admin, err := newPool(ctx, pair.url(pair.primary), "once_failover_admin", 1)
	if err != nil {
		t.Fatal(err)
	}
	err = testservers.MigratePostgres(ctx, admin, nil)
	admin.Close()
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	pair.waitCaughtUp()
	at("schema on the standby")
	if err := pair.link.add("delay", "latency", "downstream", map[string]any{"latency": failoverLinkDelay.Milliseconds()}); err != nil {
		t.Fatal(err)
	}

	pool, err := newPool(ctx, pair.clientURL(), "once_failover", failoverClients)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store, err := postgres.New(pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	scope := once.New(store, once.WithLease(prof.Lease)).Scope("failover")
	ledger := newMemLedger()
	keys := make([]string, prof.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%05d", i)
	}

	load := newFailoverLoad()
	loadCtx, cancelLoad := context.WithTimeout(ctx, prof.Deadline)
	defer cancelLoad()
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		load.run(loadCtx, keys, func(self string) callFunc { return plainCall(scope, ledger, nil, self, 0) })
	}()

	at("load started")
	calls := 2 * len(keys)
	killAt := int64(calls / 3)
	for load.acked.Load() < killAt {
		select {
		case <-loaded:
			t.Fatalf("the load ended before %d of its %d calls were answered", killAt, calls)
		case <-time.After(2 * time.Millisecond):
		}
	}
	pids := pair.freezePrimary()
	if err := pair.link.add("cut", "timeout", "downstream", map[string]any{"timeout": 0}); err != nil {
		t.Fatal(err)
	}
	pair.killPrimary(pids)
	killed := time.Now()
	ackedBefore := load.acked.Load()
	at("primary killed")
	pair.promote()
	writable := time.Since(killed)
	promotedAt := pair.storeClock(pair.replica)
	at("standby writable")
	<-loaded
	at("load done")

	// Past lease + slack on the new primary's clock no key may be in
	// progress: every claim made on the old primary has lapsed.
	pair.waitStoreClock(pair.replica, promotedAt.Add(prof.Lease+prof.Slack))
	at("lease + slack passed on the store's clock")
	rereads, stuck := rereadAll(t, keys, plainCall(scope, ledger, nil, "reread", 0))
	effects, _ := ledger.effects(ctx)
	v := check(observation{
		Mode: modeRaw, Keys: keys, Acks: load.acks, LeaseLost: load.leaseLost, Unrecorded: load.unrecorded,
		Effects: effects, Rereads: rereads, Stuck: stuck,
	})

	row := failoverRow{
		Replication: r.Name, Keys: len(keys), Calls: calls, AckedBeforeKill: int(ackedBefore),
		V: v, Errors: load.errKinds, Writable: writable, Took: time.Since(start),
	}
	summary.addFailover(row)
	t.Log("\n" + row.String())

	if len(load.left) > 0 {
		t.Errorf("%d calls not answered within %v: %v", len(load.left), prof.Deadline, load.left)
	}
	if ackedBefore >= int64(calls) {
		t.Errorf("the primary was killed after the load ended")
	}
	report := t.Errorf
	if !r.Durable && v.Stuck == 0 {
		report = t.Logf // counted: asynchronous replication may lose them
	}
	for i, msg := range v.Violations {
		if i == 20 {
			report("… %d more violations", len(v.Violations)-20)
			break
		}
		report("violation: %s", msg)
	}
}

// rereadAll calls each key once more after the failover and returns what
// it answered; stuck lists the keys whose first call was told "in
// progress". A key is called until it answers.
func rereadAll(t *testing.T, keys []string, call callFunc) (map[string]reread, []string) {
	t.Helper()
	rereads := map[string]reread{}
	var stuck []string
	for _, key := range keys {
		deadline := time.Now().Add(30 * time.Second)
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			v, replayed, err := call(ctx, key)
			cancel()
			if err == nil {
				rereads[key] = reread{Replayed: replayed, Value: v}
				break
			}
			if attempt == 0 && errors.Is(err, once.ErrInProgress) {
				stuck = append(stuck, key)
			}
			if time.Now().After(deadline) {
				rereads[key] = reread{Err: err.Error()}
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return rereads, stuck
}

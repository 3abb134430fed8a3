package peers

import (
	"context"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/stagedoor/once/bench/harness"
)

// DBOS is DBOS Transact: a workflow of one step (charge) whose workflow ID
// is the idempotency key, on its system database in the run's PostgreSQL
// database (schema dbos), with its own pool of Env.Conns connections. A
// first execution runs the workflow under a new ID and waits for its
// result; a replay runs it again under a completed ID, which returns the
// recorded result without running it. DBOS has no fingerprint: a replay
// does not check the request.
var DBOS = DBOSSteps("DBOS", 1, "dbos")

// DBOSSteps is DBOS with a workflow of steps steps, each of which calls
// charge (the workflow returns the last one's result), its system tables
// in schema (one per DBOS peer of a run: the workflow IDs are the keys,
// which every peer shares).
func DBOSSteps(name string, steps int, schema string) Peer {
	return Peer{Name: name, Postgres: func(ctx context.Context, e *Env) (*harness.Target, error) {
		return dbosTarget(ctx, e, steps, schema)
	}}
}

func dbosTarget(ctx context.Context, e *Env, steps int, schema string) (*harness.Target, error) {
	pool, err := e.NewPool(ctx)
	if err != nil {
		return nil, err
	}
	dctx, err := dbos.NewContext(ctx, dbos.Config{AppName: "once-peers", SystemDBPool: pool, DatabaseSchema: schema})
	if err != nil {
		return nil, err
	}
	ran := &Ran{}
	workflow := func(ctx dbos.Context, _ string) (harness.Payment, error) {
		id, err := dbos.GetWorkflowID(ctx)
		if err != nil {
			return harness.Payment{}, err
		}
		ran.Mark(id)
		var p harness.Payment
		for i := range steps {
			if p, err = dbos.RunAsStep(ctx, func(ctx context.Context) (harness.Payment, error) { return harness.Charge(ctx) }, dbos.WithStepName(stepNames[i])); err != nil {
				return p, err
			}
		}
		return p, nil
	}
	dbos.RegisterWorkflow(dctx, workflow)
	if err := dbos.Launch(dctx); err != nil {
		return nil, err
	}
	e.OnClose(func() { _ = dbos.Shutdown(dctx, 5*time.Second) })
	run := func(key string) (harness.Payment, error) {
		h, err := dbos.RunWorkflow(dctx, workflow, "", dbos.WithWorkflowID(key))
		if err != nil {
			return harness.Payment{}, err
		}
		return h.GetResult()
	}
	t := &harness.Target{}
	t.First = func(_ context.Context, key string) error {
		p, err := run(key)
		return ran.CheckFirst(key, p, err)
	}
	t.Replay = func(_ context.Context, key string) error {
		p, err := run(key)
		return ran.CheckReplay(key, p, err)
	}
	return t, nil
}

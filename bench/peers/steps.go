package peers

import (
	"context"
	"fmt"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/bench/harness"
)

// stepNames name the steps of the step peers' intents and workflows.
var stepNames = []string{"charge", "capture", "receipt"}

// OnceSteps is once.Do over the postgres backend (defaults, the same
// table as Once, its own scope) whose fn runs steps once.Steps, each of
// which calls charge; fn returns the last one's value.
func OnceSteps(name string, steps int) Peer {
	return Peer{Name: name, Postgres: func(ctx context.Context, e *Env) (*harness.Target, error) {
		s, err := postgres.New(e.Pool, nil)
		if err != nil {
			return nil, err
		}
		if err := s.Migrate(ctx); err != nil {
			return nil, err
		}
		return onceStepsTarget(s, fmt.Sprintf("once%d-%s", steps, e.ID), steps), nil
	}}
}

func onceStepsTarget(s *postgres.Store, scope string, steps int) *harness.Target {
	sc := once.New(s, once.WithLease(harness.Lease), once.WithRetention(harness.Retention)).Scope(scope)
	fn := func(ctx context.Context) (harness.Payment, error) {
		var p harness.Payment
		var err error
		for i := range steps {
			if p, err = once.Step(ctx, stepNames[i], harness.Charge); err != nil {
				return p, err
			}
		}
		return p, nil
	}
	t := &harness.Target{}
	t.First = func(ctx context.Context, key string) error {
		out, err := once.DoOutcome(ctx, sc, key, harness.FpA, fn)
		if err != nil || out.Status != once.Recorded || out.Value != harness.ThePayment {
			return fmt.Errorf("first execution of %s: %v %+v", key, err, out)
		}
		return nil
	}
	t.Replay = func(ctx context.Context, key string) error {
		out, err := once.DoOutcome(ctx, sc, key, harness.FpA, fn)
		if err != nil || out.Status != once.Replayed || out.Value != harness.ThePayment {
			return fmt.Errorf("replay of %s: %v %+v", key, err, out)
		}
		return nil
	}
	return t
}

// stepPeers are the targets of -steps: a plain Do (Once), Do with one and
// three steps, and DBOS workflows of one and three steps.
func stepPeers() []Peer {
	return []Peer{Raw, Once, OnceSteps("once 1 step", 1), OnceSteps("once 3 steps", 3), DBOSSteps("DBOS 1 step", 1, "dbos"), DBOSSteps("DBOS 3 steps", 3, "dbos3")}
}

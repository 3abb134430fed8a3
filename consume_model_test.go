package once_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/internal/testservers"
)

// consumeModel is what Consume must remember per key: nothing, a done
// key (value or final error) or a held key, with the fingerprint the key
// is bound to.
type consumeModel struct {
	state string // "", "done", "final", "held"
	fp    string
}

// TestConsumeAgainstAModel drives Consume with random deliveries — random
// keys (a few invalid), payloads and handler behaviours — on every store,
// and checks each decision and each handler run against a model of the
// decision table.
func TestConsumeAgainstAModel(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 1))
			steps := 400
			if name != "memory" {
				steps = 120
			}
			scope := once.New(newStore(t), once.WithLease(time.Hour)).Scope("group")
			model := map[string]*consumeModel{}
			behaviours := []string{"ok", "final", "retry", "hold", "panic", "reject"}
			for step := range steps {
				key := "k" + strconv.Itoa(rng.IntN(6))
				if rng.IntN(20) == 0 {
					key = []string{"", "a\x00b", string(make([]byte, 256))}[rng.IntN(3)]
				}
				payload := "p" + strconv.Itoa(rng.IntN(2))
				behaviour := behaviours[rng.IntN(len(behaviours))]
				ran := false
				d := once.Consume(context.Background(), scope, key, once.Fingerprint(payload), func(context.Context) error {
					ran = true
					switch behaviour {
					case "final":
						return once.Final(errors.New("declined"))
					case "retry":
						return errors.New("503")
					case "hold":
						return once.Hold(errors.New("timeout"))
					case "panic":
						panic("bug")
					case "reject":
						return once.Reject(errors.New("bad payload"))
					}
					return nil
				})

				wantReason, wantRun := predict(model, key, payload, behaviour)
				require.Equal(t, wantReason, d.Reason, "step %d: key %q payload %s behaviour %s: %v", step, key, payload, behaviour, d.Err)
				require.Equal(t, wantRun, ran, "step %d: handler run", step)
			}
		})
	}
}

// predict applies one delivery to the model and returns the reason Consume
// must answer and whether the handler must run.
func predict(model map[string]*consumeModel, key, payload, behaviour string) (once.Reason, bool) {
	if once.ValidateKey(key) != nil {
		return once.ReasonInvalidKey, false
	}
	m := model[key]
	if m == nil {
		m = &consumeModel{}
		model[key] = m
	}
	if m.state != "" && m.fp != payload {
		return once.ReasonKeyReused, false
	}
	switch m.state {
	case "done":
		return once.ReasonReplayed, false
	case "final":
		return once.ReasonReplayedFinal, false
	case "held":
		return once.ReasonInProgress, false
	}
	switch behaviour {
	case "ok":
		m.state, m.fp = "done", payload
		return once.ReasonDone, true
	case "final":
		m.state, m.fp = "final", payload
		return once.ReasonFinal, true
	case "hold":
		m.state, m.fp = "held", payload
		return once.ReasonHeld, true
	case "retry":
		return once.ReasonHandlerError, true
	case "panic":
		return once.ReasonPanicked, true
	default:
		return once.ReasonRejected, true
	}
}

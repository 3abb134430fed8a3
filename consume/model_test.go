package consume_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/consume"
	"github.com/stagedoor/once/internal/testservers"
)

// consumeModel is what Do must remember per key: nothing, a done
// key (value or final error) or a held key, with the fingerprint the key
// is bound to.
type consumeModel struct {
	state string // "", "done", "final", "held"
	fp    string
}

// TestAgainstAModel drives Do with random deliveries — random
// keys (a few invalid), payloads and handler behaviours — on every store,
// and checks each decision and each handler run against a model of the
// decision table.
func TestAgainstAModel(t *testing.T) {
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
				d := consume.Do(context.Background(), scope, key, once.Fingerprint(payload), func(context.Context) error {
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
						return consume.Reject(errors.New("bad payload"))
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

// predict applies one delivery to the model and returns the reason Do
// must answer and whether the handler must run.
func predict(model map[string]*consumeModel, key, payload, behaviour string) (consume.Reason, bool) {
	if once.ValidateKey(key) != nil {
		return consume.ReasonInvalidKey, false
	}
	m := model[key]
	if m == nil {
		m = &consumeModel{}
		model[key] = m
	}
	if m.state != "" && m.fp != payload {
		return consume.ReasonKeyReused, false
	}
	switch m.state {
	case "done":
		return consume.ReasonReplayed, false
	case "final":
		return consume.ReasonReplayed, false
	case "held":
		return consume.ReasonInProgress, false
	}
	switch behaviour {
	case "ok":
		m.state, m.fp = "done", payload
		return consume.ReasonDone, true
	case "final":
		m.state, m.fp = "final", payload
		return consume.ReasonDone, true
	case "hold":
		m.state, m.fp = "held", payload
		return consume.ReasonHeld, true
	case "retry":
		return consume.ReasonHandlerError, true
	case "panic":
		return consume.ReasonHandlerError, true
	default:
		return consume.ReasonRejected, true
	}
}

package checkpoints

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		var steps []Step
		for i := range rng.IntN(6) {
			s := Step{Name: string(rune('a'+i)) + string(make([]byte, rng.IntN(3))), State: Done}
			if rng.IntN(3) == 0 {
				s.State = Started
			} else {
				s.Outcome = make([]byte, rng.IntN(300))
				for j := range s.Outcome {
					s.Outcome[j] = byte(rng.IntN(256))
				}
			}
			steps = With(steps, s)
		}
		got, err := Parse(Encode(steps))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(steps) {
			t.Fatalf("%d steps back, want %d", len(got), len(steps))
		}
		for i := range got {
			if got[i].Name != steps[i].Name || got[i].State != steps[i].State || !bytes.Equal(got[i].Outcome, steps[i].Outcome) {
				t.Fatalf("step %d: %+v, want %+v", i, got[i], steps[i])
			}
		}
	}
}

func TestEmptyIsNone(t *testing.T) {
	if Encode(nil) != nil {
		t.Fatal("no steps must encode as nil")
	}
	if steps, err := Parse(nil); err != nil || steps != nil {
		t.Fatalf("Parse(nil) = %v, %v", steps, err)
	}
}

func TestWithReplacesAndWithoutRemoves(t *testing.T) {
	a := []Step{{Name: "a", State: Started}}
	b := With(a, Step{Name: "a", State: Done, Outcome: []byte("x")})
	if a[0].State != Started || b[0].State != Done || len(b) != 1 {
		t.Fatalf("With: %+v from %+v", b, a)
	}
	c := Without(With(b, Step{Name: "b", State: Done}), "a")
	if len(c) != 1 || c[0].Name != "b" || len(b) != 1 {
		t.Fatalf("Without: %+v", c)
	}
}

// FuzzParse: no input panics Parse, and what it accepts re-encodes to the
// same bytes.
func FuzzParse(f *testing.F) {
	f.Add(Encode([]Step{{Name: "charge", State: Done, Outcome: []byte{1, 1, '{', '}'}}, {Name: "hold", State: Started}}))
	f.Add([]byte{1, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		steps, err := Parse(data)
		if err != nil || len(steps) == 0 {
			return
		}
		if !bytes.Equal(Encode(steps), data) {
			t.Fatalf("re-encoding %x gave %x", data, Encode(steps))
		}
	})
}

package once

import (
	"errors"
	"testing"

	"github.com/stagedoor/once/internal/envelope"
)

type fuzzDeclined struct {
	Reason string `json:"reason"`
}

func (e *fuzzDeclined) Error() string { return "declined: " + e.Reason }

// FuzzDecodeOutcome feeds arbitrary stored bytes to the replay path: it
// never panics; it gives a value, a final error or ErrUndecodable; and a
// final error decoded from bytes it accepted keeps the stored text.
func FuzzDecodeOutcome(f *testing.F) {
	cfg := defaultConfig()
	RegisterError[*fuzzDeclined]("declined")(&cfg)
	f.Add(envelope.Value([]byte(`{"id":7,"tags":["a"]}`)))
	f.Add(encodeError(&cfg, Final(&fuzzDeclined{Reason: "stolen"})))
	f.Add(envelope.Error("declined", "x", []byte("null"), envelope.FlagData))
	f.Add(envelope.Error("declined", "x", []byte{0xff}, envelope.FlagData))
	f.Add(envelope.TooLarge(10, 4))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, finalErr, decodeErr := decodeOutcome[map[string]any](&cfg, data)
		switch {
		case decodeErr != nil:
			if !errors.Is(decodeErr, ErrUndecodable) || finalErr != nil || v != nil {
				t.Fatalf("a decode failure is ErrUndecodable alone: %v %v %v", v, finalErr, decodeErr)
			}
		case finalErr != nil:
			env, err := envelope.Parse(data)
			if err != nil {
				t.Fatalf("decoded a final error from bytes that do not parse: %v", err)
			}
			if env.Kind == envelope.KindError && finalErr.Error() != env.Message {
				t.Fatalf("final error text %q, stored %q", finalErr.Error(), env.Message)
			}
		}
		_, _, _ = decodeOutcome[string](&cfg, data)
	})
}

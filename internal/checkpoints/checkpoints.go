// Package checkpoints is the stored form of an intent's steps: the bytes
// package once hands to a store as backends.CheckpointParams.Steps and
// gets back from a claim. It is the one place that writes and parses them;
// the core and the operator CLI both use it.
//
// Layout: one version byte (1), then each step in the order it was first
// written: a uvarint name length and the name, a state byte, a uvarint
// outcome length and the outcome (an envelope, see package envelope;
// empty for a started step), verbatim.
package checkpoints

import (
	"encoding/binary"
	"errors"
	"slices"
)

// Version is the first byte of every list of checkpoints.
const Version = 1

// State is how far a step got.
type State uint8

const (
	// Done: the step's outcome (a value or a final error) is stored.
	Done State = 1
	// Started: an at-most-once step was marked before its function ran and
	// has no outcome: the function may or may not have acted.
	Started State = 2
)

// String returns "done" or "started".
func (s State) String() string {
	switch s {
	case Done:
		return "done"
	case Started:
		return "started"
	default:
		return "unknown"
	}
}

// Step is one checkpoint.
type Step struct {
	Name    string
	State   State
	Outcome []byte // an envelope when Done, nil when Started
}

// ErrCorrupt is returned by Parse for bytes no Encode wrote.
var ErrCorrupt = errors.New("checkpoints: corrupt")

// Parse returns the steps data holds, in order; none for empty data. The
// outcomes alias data.
func Parse(data []byte) ([]Step, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if data[0] != Version {
		return nil, ErrCorrupt
	}
	rest := data[1:]
	var steps []Step
	for len(rest) > 0 {
		name, r, ok := field(rest)
		if !ok || len(r) == 0 {
			return nil, ErrCorrupt
		}
		state := State(r[0])
		if state != Done && state != Started {
			return nil, ErrCorrupt
		}
		outcome, r, ok := field(r[1:])
		if !ok || state == Started && len(outcome) > 0 {
			return nil, ErrCorrupt
		}
		if state == Started {
			outcome = nil
		}
		steps = append(steps, Step{Name: string(name), State: state, Outcome: outcome})
		rest = r
	}
	return steps, nil
}

// field reads a uvarint length and that many bytes.
func field(b []byte) (value, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	// A length's last byte is zero only in a longer form than Encode writes.
	if w <= 0 || w > 1 && b[w-1] == 0 || n > uint64(len(b)-w) {
		return nil, nil, false
	}
	return b[w : w+int(n)], b[w+int(n):], true
}

// Encode returns the stored form of steps; nil for none, which a store
// keeps as no checkpoints at all.
func Encode(steps []Step) []byte {
	if len(steps) == 0 {
		return nil
	}
	size := 1
	for _, s := range steps {
		size += 2*binary.MaxVarintLen64 + 1 + len(s.Name) + len(s.Outcome)
	}
	b := make([]byte, 1, size)
	b[0] = Version
	for _, s := range steps {
		b = binary.AppendUvarint(b, uint64(len(s.Name)))
		b = append(b, s.Name...)
		b = append(b, byte(s.State))
		b = binary.AppendUvarint(b, uint64(len(s.Outcome)))
		b = append(b, s.Outcome...)
	}
	return b
}

// Index returns the position of the step named name, or -1.
func Index(steps []Step, name string) int {
	return slices.IndexFunc(steps, func(s Step) bool { return s.Name == name })
}

// With returns a copy of steps in which s replaces the step of its name,
// or, when there is none, is appended. steps is not modified.
func With(steps []Step, s Step) []Step {
	out := slices.Clone(steps)
	if i := Index(out, s.Name); i >= 0 {
		out[i] = s
		return out
	}
	return append(out, s)
}

// Without returns a copy of steps without the step named name.
func Without(steps []Step, name string) []Step {
	return slices.DeleteFunc(slices.Clone(steps), func(s Step) bool { return s.Name == name })
}

package faults

import (
	"strings"
	"testing"
)

// TestCheckerAllowsADuplicateOnlyAfterAReportedLeaseLoss: in raw mode, a
// second effect of a key is allowed when the worker that made the first
// was told its lease was lost (ErrLeaseLost), as after a crash between the
// effect and the completion; without such a report it is a violation,
// and in fenced mode a reported loss allows nothing.
func TestCheckerAllowsADuplicateOnlyAfterAReportedLeaseLoss(t *testing.T) {
	effects := map[string][]effect{"k": {{Key: "k", Value: "w1/1", Worker: "w1", Attempts: 1}, {Key: "k", Value: "w2/1", Worker: "w2", Attempts: 1}}}
	acks := []event{{Ev: "ack", Key: "k", Value: "w2/1", Worker: "w2"}}
	lost := []event{{Ev: "err", Key: "k", Kind: "lease_lost", Worker: "w1"}}
	for _, c := range []struct {
		name       string
		mode       string
		leaseLost  []event
		violations int
	}{
		{"raw, lease loss reported", modeRaw, lost, 0},
		{"raw, no report", modeRaw, nil, 1},
		{"raw, a loss reported for another key", modeRaw, []event{{Ev: "err", Key: "other", Kind: "lease_lost", Worker: "w1"}}, 1},
		{"fenced, lease loss reported", modeFenced, lost, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := check(observation{Mode: c.mode, Keys: []string{"k"}, Acks: acks, LeaseLost: c.leaseLost, Effects: effects})
			if len(v.Violations) != c.violations {
				t.Fatalf("violations %q, want %d", v.Violations, c.violations)
			}
			if c.violations == 0 && (len(v.AllowedDups) != 1 || !strings.Contains(v.AllowedDups[0], "ErrLeaseLost reported to w1")) {
				t.Fatalf("allowed duplicates %q", v.AllowedDups)
			}
		})
	}
}

package faults

import (
	"strings"
	"testing"
)

// TestCheckerAllowsADuplicateOnlyAfterAReportedLeaseLoss: in raw mode, a
// second effect of a key is allowed when the worker that made the first
// was told its lease was lost (ErrLeaseLost) or its outcome not recorded
// (ErrOutcomeUnrecorded), as after a crash between the effect and the
// completion; without such a report it is a violation, and in fenced mode
// a report allows nothing.
func TestCheckerAllowsADuplicateOnlyAfterAReportedLeaseLoss(t *testing.T) {
	effects := map[string][]effect{"k": {{Key: "k", Value: "w1/1", Worker: "w1", Attempts: 1}, {Key: "k", Value: "w2/1", Worker: "w2", Attempts: 1}}}
	acks := []event{{Ev: "ack", Key: "k", Value: "w2/1", Worker: "w2"}}
	lost := []event{{Ev: "err", Key: "k", Kind: "lease_lost", Worker: "w1"}}
	unrecorded := []event{{Ev: "err", Key: "k", Kind: "unrecorded", Worker: "w1"}}
	for _, c := range []struct {
		name       string
		mode       string
		leaseLost  []event
		unrecorded []event
		violations int
		report     string
	}{
		{"raw, lease loss reported", modeRaw, lost, nil, 0, "ErrLeaseLost reported to w1"},
		{"raw, unrecorded outcome reported", modeRaw, nil, unrecorded, 0, "ErrOutcomeUnrecorded reported to w1"},
		{"raw, no report", modeRaw, nil, nil, 1, ""},
		{"raw, a loss reported for another key", modeRaw, []event{{Ev: "err", Key: "other", Kind: "lease_lost", Worker: "w1"}}, nil, 1, ""},
		{"fenced, lease loss reported", modeFenced, lost, nil, 1, ""},
		{"fenced, unrecorded outcome reported", modeFenced, nil, unrecorded, 1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := check(observation{Mode: c.mode, Keys: []string{"k"}, Acks: acks, LeaseLost: c.leaseLost, Unrecorded: c.unrecorded, Effects: effects})
			if len(v.Violations) != c.violations {
				t.Fatalf("violations %q, want %d", v.Violations, c.violations)
			}
			if c.violations == 0 && (len(v.AllowedDups) != 1 || !strings.Contains(v.AllowedDups[0], c.report)) {
				t.Fatalf("allowed duplicates %q", v.AllowedDups)
			}
		})
	}
}

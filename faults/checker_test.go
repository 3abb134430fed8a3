package faults

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// reread is what a fresh DoOutcome answered for an acknowledged key after
// the run.
type reread struct {
	Replayed bool
	Value    string
	Err      string
}

// observation is everything a run left behind.
type observation struct {
	Mode   string
	Keys   []string
	Acks   []event
	Faults []event
	// LeaseLost are the Do calls that returned ErrLeaseLost: the worker's
	// renewals failed (it was starved past Lease − Lease/3, or its store
	// was slow) after fn may have run.
	LeaseLost []event
	// Unrecorded are the Do calls that returned fn's value with
	// ErrOutcomeUnrecorded: the store could not record the outcome, and
	// the key runs fn again after its lease, as Do documents.
	Unrecorded []event
	Effects    map[string][]effect
	Rereads    map[string]reread
	// Stuck lists the keys still in progress past lease + slack.
	Stuck []string
}

// verdict is the checker's answer.
type verdict struct {
	Violations []string
	// AllowedDups reports the raw-mode keys with more than one effect
	// whose worker died between the effect and the completion, or was told
	// that its lease was lost (ErrLeaseLost) or its outcome not recorded
	// (ErrOutcomeUnrecorded) after the effect: an unfenced
	// effect is not protected against a stale owner, and the library
	// reports each such case to its caller, which is what is checked.
	AllowedDups []string
	// DupKeys counts keys with more than one effect (allowed or not).
	DupKeys int
	// MaxEffects is the largest number of effects of one key; MaxAttempts
	// the largest number of calls a fenced key's provider absorbed.
	MaxEffects, MaxAttempts int
	Acked, Lost, Changed    int
	Stuck                   int
}

// check applies the invariants to a run.
func check(o observation) verdict {
	var v verdict
	bad := func(format string, args ...any) { v.Violations = append(v.Violations, fmt.Sprintf(format, args...)) }

	window := map[string][]string{} // key -> faults inside the crash window
	for _, f := range o.Faults {
		if crashWindow[f.Point] {
			window[f.Key] = append(window[f.Key], fmt.Sprintf("%s at %s in %s", f.Action, f.Point, f.Worker))
		}
	}
	for _, e := range o.LeaseLost {
		window[e.Key] = append(window[e.Key], fmt.Sprintf("ErrLeaseLost reported to %s", e.Worker))
	}
	for _, e := range o.Unrecorded {
		window[e.Key] = append(window[e.Key], fmt.Sprintf("ErrOutcomeUnrecorded reported to %s", e.Worker))
	}
	acked := ackedValues(o.Acks)

	keys := append([]string(nil), o.Keys...)
	sort.Strings(keys)
	for _, key := range keys {
		effs := o.Effects[key]
		n := len(effs)
		v.MaxEffects = max(v.MaxEffects, n)
		for _, e := range effs {
			v.MaxAttempts = max(v.MaxAttempts, e.Attempts)
		}
		if n > 1 {
			v.DupKeys++
			allowed := 1
			if o.Mode == modeRaw {
				allowed += len(window[key])
			}
			if n > allowed {
				bad("key %s: %d effects (allowed %d in %s mode)", key, n, allowed, o.Mode)
			} else {
				v.AllowedDups = append(v.AllowedDups, fmt.Sprintf("key %s: %d effects after %v", key, n, window[key]))
			}
		}
		checkAnswer(o, key, acked[key], func(first string) string {
			if n == 0 {
				return "with no effect in the ledger"
			}
			if made := strings.TrimPrefix(first, verdictPrefix); !slices.ContainsFunc(effs, func(e effect) bool { return e.Value == made }) {
				return "which no effect made"
			}
			return ""
		}, &v, bad)
	}
	checkStuck(o, &v, bad)
	return v
}

// ackedValues returns the acknowledged answers by key, in order.
func ackedValues(acks []event) map[string][]string {
	acked := map[string][]string{}
	for _, a := range acks {
		acked[a.Key] = append(acked[a.Key], a.Value)
	}
	return acked
}

// checkAnswer applies the invariants of the answers acknowledged for key
// (values): every one the same, made by an effect (unmade explains why
// not, or returns ""), and replayed unchanged after the run.
func checkAnswer(o observation, key string, values []string, unmade func(first string) string, v *verdict, bad func(string, ...any)) {
	if len(values) == 0 {
		return
	}
	v.Acked++
	first := values[0]
	if i := slices.IndexFunc(values, func(s string) bool { return s != first }); i >= 0 {
		v.Changed++
		bad("key %s: acknowledged %q, later %q", key, first, values[i])
	}
	if why := unmade(first); why != "" {
		bad("key %s: acknowledged %q, %s", key, first, why)
	}
	if o.Rereads == nil {
		return
	}
	rr, ok := o.Rereads[key]
	switch {
	case !ok:
		v.Lost++
		bad("key %s: not re-read", key)
	case rr.Err != "" || !rr.Replayed || rr.Value != first:
		v.Lost++
		bad("key %s: acknowledged %q, re-read gave replayed=%v value=%q err=%q", key, first, rr.Replayed, rr.Value, rr.Err)
	}
}

// checkStuck reports the keys in progress past lease + slack.
func checkStuck(o observation, v *verdict, bad func(string, ...any)) {
	v.Stuck = len(o.Stuck)
	for _, k := range o.Stuck {
		bad("key %s: in progress past lease + slack", k)
	}
}

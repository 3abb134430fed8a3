package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/stagedoor/once/backends"
)

type listCmd struct {
	State     string        `default:"open" enum:"open,pending,held,completed,all" help:"Which records: open (pending and held: the default), pending, held, completed, or all (every state, completed last)."`
	OlderThan time.Duration `name:"older-than" default:"0s" help:"Only records in their state at least this long (claimed, or held; never a completed one)."`
	Scope     string        `help:"Only this scope (default: every scope)."`
	KeyPrefix string        `name:"key-prefix" help:"Only keys starting with this."`
	Limit     int           `default:"1000" help:"Stop after this many records (0: no limit)."`
	Page      int           `default:"100" help:"Records asked of the store per page."`
}

// listedView is one line of list.
type listedView struct {
	Scope string `json:"scope"`
	Key   string `json:"key"`
	State string `json:"state"`
	AgeMS int64  `json:"age_ms"`
	// LeaseRemainingMS: the owner's lease (pending) or a reconciler's
	// (held); negative once lapsed.
	LeaseRemainingMS int64 `json:"lease_remaining_ms"`
	// HoldRemainingMS is set for a held record; HoldUntilResolved marks an
	// unbounded hold.
	HoldRemainingMS   *int64 `json:"hold_remaining_ms,omitempty"`
	HoldUntilResolved bool   `json:"hold_until_resolved,omitempty"`
	HeldCode          string `json:"held_code,omitempty"`
	HeldMessage       string `json:"held_message,omitempty"`
	ExpiresInMS       int64  `json:"expires_in_ms"`
}

func (l *listCmd) Run(e *env) error {
	if l.Scope != "" {
		if err := validName("scope", l.Scope, backends.MaxScopeLen); err != nil {
			return usage(err)
		}
	}
	if l.OlderThan < 0 || l.Limit < 0 || l.Page <= 0 || l.Page > backends.MaxListLimit {
		return usagef("--older-than and --limit must not be negative, --page must be 1 to %d", backends.MaxListLimit)
	}
	k, err := e.cli.selectBackend()
	if err != nil {
		return err
	}
	ctx, c, done, err := e.connect(k)
	if err != nil {
		return err
	}
	defer done()
	lister, err := c.lister("list")
	if err != nil {
		return err
	}
	var views []listedView
	truncated := false
	for _, state := range listStates[l.State] {
		p := backends.ListParams{State: state, OlderThan: l.OlderThan, Scope: l.Scope, KeyPrefix: l.KeyPrefix, Limit: l.Page}
		for !truncated {
			page, err := lister.List(ctx, p)
			if err != nil {
				return err
			}
			for _, r := range page.Records {
				if l.Limit > 0 && len(views) == l.Limit {
					truncated = true
					break
				}
				views = append(views, newListedView(r))
			}
			if page.Next == "" {
				break
			}
			p.Cursor = page.Next
		}
	}
	if e.cli.JSON {
		if err := e.emitLines(views); err != nil {
			return err
		}
		if truncated {
			// The last line says the list stopped at --limit: an object
			// without "scope", so no consumer takes it for a record.
			return e.emit(truncatedView{Truncated: true, Limit: l.Limit})
		}
		return nil
	}
	lines := []string{fmt.Sprintf("%-9s %10s  %-24s %s", "STATE", "AGE", "SCOPE", "KEY  (DETAIL)")}
	for _, v := range views {
		lines = append(lines, v.text())
	}
	summary := fmt.Sprintf("%d record(s)", len(views))
	if truncated {
		summary += fmt.Sprintf(" (stopped at --limit %d)", l.Limit)
	}
	return e.emit(nil, append(lines, summary)...)
}

// listStates are the walks of each --state, in order (state zero lists
// pending and held records).
var listStates = map[string][]backends.State{
	"open":      {0},
	"pending":   {backends.StatePending},
	"held":      {backends.StateHeld},
	"completed": {backends.StateCompleted},
	"all":       {0, backends.StateCompleted},
}

// truncatedView is the last line of list --json when it stopped at
// --limit (more records matched).
type truncatedView struct {
	Truncated bool `json:"truncated"`
	Limit     int  `json:"limit"`
}

func newListedView(r backends.Listed) listedView {
	v := listedView{
		Scope: r.Scope, Key: r.Key, State: r.Record.State.String(),
		AgeMS: r.Record.Age.Milliseconds(), LeaseRemainingMS: r.Record.LeaseRemaining.Milliseconds(),
		ExpiresInMS: r.Record.ExpiresIn.Milliseconds(),
	}
	if r.Record.State == backends.StateHeld {
		h := r.Record.Held
		ms := h.Remaining.Milliseconds()
		v.HoldRemainingMS, v.HoldUntilResolved = &ms, h.Unbounded()
		v.HeldCode, v.HeldMessage = h.Code, h.Message
	}
	return v
}

func (v listedView) text() string {
	detail, age := "", roundAge(ms(v.AgeMS))
	switch {
	case v.State == backends.StateCompleted.String():
		detail, age = "expires in "+roundAge(ms(v.ExpiresInMS)), "-" // no age of its own
	case v.HoldRemainingMS == nil && v.LeaseRemainingMS > 0:
		detail = "running, lease " + ms(v.LeaseRemainingMS).String() + " left"
	case v.HoldRemainingMS == nil:
		detail = "lease lapsed: the next call takes it over"
	default:
		detail = holdText(v)
	}
	return fmt.Sprintf("%-9s %10s  %-24s %s  (%s)", v.State, age, quoteText(v.Scope), quoteText(v.Key), detail)
}

// holdText describes a held record's hold and error.
func holdText(v listedView) string {
	var parts []string
	switch {
	case v.HoldUntilResolved:
		parts = append(parts, "held until resolved")
	case *v.HoldRemainingMS > 0:
		parts = append(parts, "held "+ms(*v.HoldRemainingMS).String()+" more")
	default:
		parts = append(parts, "hold ended: the next call runs it again")
	}
	if v.LeaseRemainingMS > 0 {
		parts = append(parts, "a reconciler has it for "+ms(v.LeaseRemainingMS).String())
	}
	switch {
	case v.HeldCode != "":
		parts = append(parts, quoteText(v.HeldCode)+": "+quoteText(v.HeldMessage))
	case v.HeldMessage != "":
		parts = append(parts, quoteText(v.HeldMessage))
	}
	return strings.Join(parts, "; ")
}

// roundAge prints an age to the second (to the millisecond below one).
func roundAge(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

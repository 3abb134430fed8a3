package faults

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// summaryRow is one scenario's line in the summary table.
type summaryRow struct {
	Scenario, Backend, Mode string
	Keys, Procs             int
	Faults, Errors          map[string]int
	V                       verdict
	Took                    time.Duration
}

const tableHeader = "| scenario | store | effect | keys | processes | faults injected | effects/key (max) | keys with 2+ effects | outcomes lost | stuck keys | violations | Do errors seen (retried) | time |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"

func (r summaryRow) line() string {
	dups := fmt.Sprint(r.V.DupKeys)
	if len(r.V.AllowedDups) > 0 {
		dups = fmt.Sprintf("%d (crash between effect and completion, or reported lease loss)", len(r.V.AllowedDups))
	}
	if r.Mode == modeFenced && r.V.MaxAttempts > 1 {
		dups += fmt.Sprintf("; provider absorbed up to %d calls/key", r.V.MaxAttempts)
	}
	return fmt.Sprintf("| %s | %s | %s | %d | %d | %s | %d | %s | %d | %d | %d | %s | %.1fs |\n",
		r.Scenario, r.Backend, r.Mode, r.Keys, r.Procs, orNone(kindsOf(r.Faults)), r.V.MaxEffects, dups,
		r.V.Lost, r.V.Stuck, len(r.V.Violations), orNone(kindsOf(r.Errors)), r.Took.Seconds())
}

func (r summaryRow) String() string { return tableHeader + r.line() }

func orNone(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// summary collects the rows and notes of this run of the suite.
var summary = &collector{}

type collector struct {
	mu        sync.Mutex
	rows      []summaryRow
	notes     []string
	failovers []failoverRow
}

func (c *collector) add(r summaryRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows = append(c.rows, r)
}

// note records a one-line result of an in-process check.
func (c *collector) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

func (c *collector) markdown(code int, took time.Duration) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows := append([]summaryRow(nil), c.rows...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Scenario < rows[j].Scenario })
	notes := append([]string(nil), c.notes...)
	sort.Strings(notes)
	failovers := append([]failoverRow(nil), c.failovers...)
	prof := currentProfile()
	var b strings.Builder
	keys, procs, faults, lost, stuck, viol, maxEff := 0, 0, map[string]int{}, 0, 0, 0, 0
	for _, r := range rows {
		keys += r.Keys
		procs += r.Procs
		for k, n := range r.Faults {
			faults[k] += n
		}
		lost += r.V.Lost
		stuck += r.V.Stuck
		viol += len(r.V.Violations)
		if r.Mode != modeRaw {
			maxEff = max(maxEff, r.V.MaxEffects)
		}
	}
	cmd := "ONCE_REQUIRE_SERVERS=1 go test -race -count=1 ./faults/ -args -faults.write-results"
	if prof.Name == "long" {
		cmd = "ONCE_REQUIRE_SERVERS=1 go test -count=1 -timeout 30m ./faults/ -args -faults.long -faults.write-results"
	}
	status := "PASS"
	if code != 0 {
		status = "FAIL"
	}
	fmt.Fprintf(&b, "# Fault-injection results\n\nProfile `%s` (%d keys and %d worker processes per scenario, lease %v, slack %v), %s, %s/%s, %d CPUs, %s: **%s** in %.0fs.\n\nReproduce:\n\n```\n%s\n```\n\n",
		prof.Name, prof.Keys, prof.Workers, prof.Lease, prof.Slack, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		time.Now().UTC().Format("2006-01-02"), status, took.Seconds(), cmd)
	fmt.Fprintf(&b, "Totals: %d scenarios, %d keys, %d processes; faults: %s; max effects per key with a fenced or transactional effect: %d; acknowledged outcomes lost or changed: %d; stuck keys: %d; violations: %d.\n\n",
		len(rows), keys, procs, orNone(kindsOf(faults)), maxEff, lost, stuck, viol)
	b.WriteString(tableHeader)
	for _, r := range rows {
		b.WriteString(r.line())
	}
	if len(notes) > 0 {
		b.WriteString("\nIn-process checks:\n\n")
		for _, n := range notes {
			b.WriteString("- " + n + "\n")
		}
	}
	b.WriteString(failoverMarkdown(failovers))
	return b.String()
}

// finish prints the summary and, with -faults.write-results, writes it to
// RESULTS.md.
func (c *collector) finish(code int, took time.Duration) error {
	c.mu.Lock()
	empty := len(c.rows) == 0 && len(c.notes) == 0 && len(c.failovers) == 0
	c.mu.Unlock()
	if empty {
		return nil
	}
	md := c.markdown(code, took)
	fmt.Println(md)
	if *flagResults {
		old, err := os.ReadFile("RESULTS.md")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return os.WriteFile("RESULTS.md", []byte(keepSections(md, string(old))), 0o644)
	}
	return nil
}

// keepSections returns md followed by the "## " sections of old that md
// does not have: the hand-written ones (held keys, steps) and those of
// scenarios this run did not include, which a rewrite must not drop.
func keepSections(md, old string) string {
	sections := strings.Split(old, "\n## ")
	for _, sec := range sections[1:] {
		header, _, _ := strings.Cut(sec, "\n")
		if !strings.Contains(md, "\n## "+header+"\n") {
			md = strings.TrimRight(md, "\n") + "\n\n## " + strings.TrimRight(sec, "\n") + "\n"
		}
	}
	return md
}

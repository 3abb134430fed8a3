package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// TestQuick runs the command as CI does (-quick) against whichever servers
// are reachable, so that it never rots. A missing server skips its backend,
// and fails the test under ONCE_REQUIRE_SERVERS=1 or CI.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the benchmark run is the full loop's")
	}
	o, err := parseFlags([]string{"-quick", "-out", t.TempDir()}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, log bytes.Buffer
	res, err := run(ctx, o, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	rows, skipped := res.rows, res.skipped
	for _, s := range skipped {
		if serverenv.Required() {
			t.Error(s)
		} else {
			t.Log(s)
		}
	}
	if want := (len(o.backends) - len(skipped)) * int(numPaths) * len(o.goroutines); len(rows) != want {
		t.Fatalf("%d rows, want %d", len(rows), want)
	}
	// The round-trip targets of DESIGN.md §5: 2 for a first execution, 1
	// for every other path (counted as Store calls). The raw baselines: the
	// seed's SQL mechanism (PostgreSQL, MariaDB, SQLite) needs 2 on every
	// path (the insert, then the update or the read); the Redis one 1 after
	// a lost SET NX GET, as the memory map.
	for _, r := range rows {
		want, wantRaw := 1.0, 1.0
		if r.path == pathFirst {
			want, wantRaw = 2, 2
		}
		if r.backend == "postgres" || r.backend == "mysql" || r.backend == "sqlite" {
			wantRaw = 2
		}
		if got := r.lib.PerOp(uint64(r.lib.Trips)); got != want || r.lib.Ops == 0 {
			t.Errorf("%s %v g=%d: library %.2f round trips/op over %d ops, want %v", r.backend, r.path, r.goroutines, got, r.lib.Ops, want)
		}
		if got := r.raw.PerOp(uint64(r.raw.Trips)); got != wantRaw || r.raw.Ops == 0 {
			t.Errorf("%s %v g=%d: baseline %.2f round trips/op over %d ops, want %v", r.backend, r.path, r.goroutines, got, r.raw.Ops, wantRaw)
		}
		if r.hasSame && (r.same.Ops == 0 || r.same.PerOp(uint64(r.same.Trips)) != want) {
			t.Errorf("%s %v g=%d: same statements %.2f round trips/op over %d ops, want %v", r.backend, r.path, r.goroutines, r.same.PerOp(uint64(r.same.Trips)), r.same.Ops, want)
		}
	}
	// PostgreSQL's statistics: the HOT ratios of the first executions and
	// the per-operation WAL of every target's statements.
	if slices.Contains(o.backends, "postgres") && len(skipped) == 0 {
		notes := strings.Join(res.notes, "\n")
		for _, want := range []string{"| library |", "| raw |", "| same statements |", "library first execution", "raw replay", "HOT ratio", "WAL bytes/op"} {
			if !strings.Contains(notes, want) {
				t.Errorf("PostgreSQL notes lack %q:\n%s", want, notes)
			}
		}
	}
	// Every backend of the default list is measured: the new stores too.
	for _, b := range []string{"memory", "postgres", "redis", "mysql", "sqlite"} {
		if !slices.Contains(o.backends, b) {
			t.Errorf("-quick leaves out %s", b)
		}
	}
	writeTable(&out, rows)
	if len(rows) > 0 {
		if err := writePlot(filepath.Join(o.out, "throughput.svg"), rows); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("\n%s", out.String())
}

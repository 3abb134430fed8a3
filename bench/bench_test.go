package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
	rows, skipped, err := run(ctx, o, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
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
	// for every other path, for the library and its baseline alike.
	for _, r := range rows {
		want := 1.0
		if r.path == pathFirst {
			want = 2
		}
		if got := r.lib.perOp(uint64(r.lib.trips)); got != want || r.lib.ops == 0 {
			t.Errorf("%s %v g=%d: library %.2f round trips/op over %d ops, want %v", r.backend, r.path, r.goroutines, got, r.lib.ops, want)
		}
		if got := r.raw.perOp(uint64(r.raw.trips)); got != want || r.raw.ops == 0 {
			t.Errorf("%s %v g=%d: baseline %.2f round trips/op over %d ops, want %v", r.backend, r.path, r.goroutines, got, r.raw.ops, want)
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

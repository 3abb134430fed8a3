package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPlotOfOneGoroutineCount: a run with a single goroutine count
// (-goroutines 1) writes its plot; it used to panic in gonum's log scale.
func TestPlotOfOneGoroutineCount(t *testing.T) {
	s := sample{Ops: 100, Elapsed: time.Second}
	for _, counts := range [][]int{{1}, {16}, {1, 16}} {
		var rows []row
		for _, g := range counts {
			rows = append(rows, row{backend: "memory", path: pathFirst, goroutines: g, lib: s, raw: s})
		}
		file := filepath.Join(t.TempDir(), "throughput.svg")
		if err := writePlot(file, rows); err != nil {
			t.Fatalf("goroutines %v: %v", counts, err)
		}
		if _, err := os.Stat(file); err != nil {
			t.Fatalf("goroutines %v: %v", counts, err)
		}
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/localcache"
)

// cachedLibraryTarget is libraryTarget with a local cache (package
// localcache), in its own scope.
func cachedLibraryTarget(ctx context.Context, store backends.Store, id string) (*target, error) {
	return libraryTarget(ctx, store, "cached-"+id, &localcache.Config{MaxEntries: 1024})
}

// runLocalCache measures the hot-key replay (-local-cache): the raw
// baseline, once.Do, and once.Do with a local cache, interleaved per round
// like the main table, on every backend and goroutine count, and prints a
// Markdown table of throughput, ratios to the raw baseline and store round
// trips per op.
func runLocalCache(ctx context.Context, o options, out, log io.Writer) error {
	id := runID()
	var md strings.Builder
	fmt.Fprintf(&md, "Hot-key replay with a local cache; measured %s; -duration %v -rounds %d -pg-conns %d.\n\n", machine(), o.duration, o.rounds, o.pgConns)
	md.WriteString("| backend | goroutines | raw ops/s | once ops/s | once+cache ops/s | once ÷ raw | once+cache ÷ raw | trips/op once+cache |\n")
	md.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, name := range o.backends {
		setup, ok := setups[name]
		if !ok {
			return fmt.Errorf("unknown backend %q", name)
		}
		s, err := setup(ctx, id, o)
		if err != nil {
			fmt.Fprintf(&md, "| %s | skipped: %v |||||||\n", name, err)
			continue
		}
		err = localCacheRows(ctx, &md, name, s, o, log)
		s.cleanup()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	fmt.Fprintf(&md, "\nLoad average at the end: %s.\n", loadAvg())
	fmt.Fprint(out, md.String())
	return nil
}

func localCacheRows(ctx context.Context, md io.Writer, name string, s *suite, o options, log io.Writer) error {
	targets := []*target{s.raw, s.lib, s.cached}
	for _, t := range targets {
		if _, err := runCell(ctx, t, pathReplay, max(o.goroutines[len(o.goroutines)-1], 1), o.duration/4); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	for _, g := range o.goroutines {
		sums := make([]sample, len(targets))
		for round := range o.rounds {
			for i := range targets {
				k := (i + round) % len(targets)
				smp, err := runCellRetry(ctx, targets[k], pathReplay, g, o.duration, log)
				if err != nil {
					return err
				}
				sums[k].Add(smp)
			}
		}
		raw, lib, cached := sums[0].OpsPerSec(), sums[1].OpsPerSec(), sums[2].OpsPerSec()
		fmt.Fprintf(md, "| %s | %d | %.0f | %.0f | %.0f | %.2f | %.2f | %.4f |\n",
			name, g, raw, lib, cached, lib/raw, cached/raw, sums[2].PerOp(uint64(sums[2].Trips)))
		fmt.Fprintf(log, "%s g=%d raw %.0f once %.0f once+cache %.0f ops/s\n", name, g, raw, lib, cached)
	}
	return nil
}

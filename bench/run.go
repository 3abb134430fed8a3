package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"
)

// options are the command's flags.
type options struct {
	duration   time.Duration
	rounds     int
	backends   []string
	goroutines []int
	out        string
	pgConns    int
	scale      bool
}

// row is one line of the table: both targets at one (backend, path,
// goroutines), summed over the rounds.
type row struct {
	backend    string
	path       path
	goroutines int
	lib, raw   sample
}

func (r row) ratio() float64 {
	if raw := r.raw.opsPerSec(); raw > 0 {
		return r.lib.opsPerSec() / raw
	}
	return 0
}

type setupFunc func(ctx context.Context, id string, o options) (lib, raw *target, cleanup func(), err error)

var setups = map[string]setupFunc{
	"memory": func(ctx context.Context, id string, _ options) (*target, *target, func(), error) {
		return setupMemory(ctx, id)
	},
	"postgres": func(ctx context.Context, id string, o options) (*target, *target, func(), error) {
		return setupPostgres(ctx, id, int32(o.pgConns))
	},
	"redis": func(ctx context.Context, id string, _ options) (*target, *target, func(), error) {
		return setupRedis(ctx, id)
	},
}

// unavailableError reports a backend whose server could not be used.
type unavailableError struct {
	backend string
	err     error
}

func (e *unavailableError) Error() string {
	return fmt.Sprintf("%s unavailable: %v", e.backend, e.err)
}

// run measures every (backend, path, goroutines) cell, library and
// baseline interleaved: each round runs the library, then the baseline,
// so that drift of a shared machine hits both alike. Backends whose server
// cannot be reached are reported in skipped and left out.
func run(ctx context.Context, o options, log io.Writer) (rows []row, skipped []error, err error) {
	id := runID()
	for _, name := range o.backends {
		setup, ok := setups[name]
		if !ok {
			return nil, nil, fmt.Errorf("unknown backend %q", name)
		}
		lib, raw, cleanup, err := setup(ctx, id, o)
		if err != nil {
			skipped = append(skipped, &unavailableError{name, err})
			fmt.Fprintf(log, "skipping %s: %v\n", name, err)
			continue
		}
		rs, err := runBackend(ctx, name, lib, raw, o, log)
		cleanup()
		if err != nil {
			return rows, skipped, fmt.Errorf("%s: %w", name, err)
		}
		rows = append(rows, rs...)
	}
	return rows, skipped, nil
}

func runBackend(ctx context.Context, name string, lib, raw *target, o options, log io.Writer) ([]row, error) {
	// Warm up: connections, prepared statements, script caches, maps.
	warm := min(o.duration/4, 250*time.Millisecond)
	for p := range numPaths {
		for _, t := range []*target{lib, raw} {
			if _, err := runCell(ctx, t, p, max(o.goroutines[len(o.goroutines)-1], 1), warm); err != nil {
				return nil, fmt.Errorf("warm-up %v: %w", p, err)
			}
		}
	}
	// First executions last: they leave millions of records behind, which
	// would slow every later cell with garbage collection.
	var rows []row
	for _, p := range []path{pathReplay, pathInProgress, pathMismatch, pathFirst} {
		for _, g := range o.goroutines {
			r := row{backend: name, path: p, goroutines: g}
			began := time.Now()
			for range o.rounds {
				s, err := runCellRetry(ctx, lib, p, g, o.duration, log)
				if err != nil {
					return rows, fmt.Errorf("library %v g=%d: %w", p, g, err)
				}
				r.lib.add(s)
				if s, err = runCellRetry(ctx, raw, p, g, o.duration, log); err != nil {
					return rows, fmt.Errorf("baseline %v g=%d: %w", p, g, err)
				}
				r.raw.add(s)
			}
			fmt.Fprintf(log, "%-8s %-15s g=%-3d library %9.0f ops/s  baseline %9.0f ops/s  ratio %.2f  (%v)\n",
				name, p, g, r.lib.opsPerSec(), r.raw.opsPerSec(), r.ratio(), time.Since(began).Round(time.Millisecond))
			rows = append(rows, r)
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return int(a.path) - int(b.path) })
	return rows, nil
}

// runCellRetry runs a cell, and runs it again (twice at most) when it
// failed: the servers are shared, and another engineer's test may
// terminate connections. The failed attempt's figures are dropped.
func runCellRetry(ctx context.Context, t *target, p path, g int, d time.Duration, log io.Writer) (sample, error) {
	var err error
	for attempt := range 3 {
		var s sample
		if s, err = runCell(ctx, t, p, g, d); err == nil || ctx.Err() != nil {
			return s, err
		}
		fmt.Fprintf(log, "  %v g=%d attempt %d failed, retrying: %v\n", p, g, attempt+1, err)
	}
	return sample{}, err
}

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
	localCache bool
	// mysqlClaims is mysqlstore's claim order: "insert-first" (its
	// default), "read-first" or "one-call".
	mysqlClaims string
}

// suite is what a backend's setup returns: the targets to compare and the
// backend's own statistics.
type suite struct {
	lib *target // once.Do over the backend
	// cached is once.Do with a local cache over the same backend (-local-cache).
	cached *target
	raw    *target // the seed's mechanism written minimally against the driver
	same   *target // the library's own statements or scripts without the library; nil if none
	// firstBegin and firstEnd, when set, bracket every first-execution
	// cell; notes returns a Markdown section printed under the table.
	firstBegin, firstEnd func(ctx context.Context) error
	notes                func(ctx context.Context) (string, error)
	cleanup              func()
}

// row is one line of the table: every target at one (backend, path,
// goroutines), summed over the rounds, with the per-round ratios whose
// medians the table reports.
type row struct {
	backend         string
	path            path
	goroutines      int
	lib, raw, same  sample
	hasSame         bool
	libRaw, libSame []float64 // per round: library ops/s ÷ raw, ÷ same
}

// ratio is the median over the rounds of library ÷ raw baseline.
func (r row) ratio() float64 { return median(r.libRaw) }

// sameRatio is the median over the rounds of library ÷ same statements.
func (r row) sameRatio() float64 { return median(r.libSame) }

type setupFunc func(ctx context.Context, id string, o options) (*suite, error)

var setups = map[string]setupFunc{
	"memory": func(ctx context.Context, id string, _ options) (*suite, error) {
		return setupMemory(ctx, id)
	},
	"postgres": func(ctx context.Context, id string, o options) (*suite, error) {
		return setupPostgres(ctx, id, int32(o.pgConns))
	},
	"redis": func(ctx context.Context, id string, _ options) (*suite, error) {
		return setupRedis(ctx, id)
	},
	"mysql": func(ctx context.Context, id string, o options) (*suite, error) {
		return setupMySQL(ctx, id, o.pgConns, o.mysqlClaims)
	},
	"sqlite": func(ctx context.Context, id string, _ options) (*suite, error) {
		return setupSQLite(ctx, id)
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

// result is what run measured.
type result struct {
	rows    []row
	notes   []string // one Markdown section per backend that has one
	skipped []error
}

// run measures every (backend, path, goroutines) cell, the targets
// interleaved: each round runs every target once per cell, in an order that
// rotates from round to round, so that drift of a shared machine hits all
// alike. Backends whose server cannot be reached are reported in skipped and
// left out.
func run(ctx context.Context, o options, log io.Writer) (res result, err error) {
	id := runID()
	for _, name := range o.backends {
		setup, ok := setups[name]
		if !ok {
			return res, fmt.Errorf("unknown backend %q", name)
		}
		s, err := setup(ctx, id, o)
		if err != nil {
			res.skipped = append(res.skipped, &unavailableError{name, err})
			fmt.Fprintf(log, "skipping %s: %v\n", name, err)
			continue
		}
		rs, err := runBackend(ctx, name, s, o, log)
		if err == nil && s.notes != nil {
			var n string
			if n, err = s.notes(ctx); err == nil {
				res.notes = append(res.notes, n)
				fmt.Fprint(log, n)
			}
		}
		s.cleanup()
		if err != nil {
			return res, fmt.Errorf("%s: %w", name, err)
		}
		res.rows = append(res.rows, rs...)
	}
	return res, nil
}

func runBackend(ctx context.Context, name string, s *suite, o options, log io.Writer) ([]row, error) {
	targets := []*target{s.lib, s.raw}
	if s.same != nil {
		targets = append(targets, s.same)
	}
	// Warm up: connections, prepared statements, script caches, maps.
	warm := min(o.duration/4, 250*time.Millisecond)
	for p := range numPaths {
		for _, t := range targets {
			if _, err := runCell(ctx, t, p, max(o.goroutines[len(o.goroutines)-1], 1), warm); err != nil {
				return nil, fmt.Errorf("warm-up %v: %w", p, err)
			}
		}
	}
	// First executions last: they leave millions of records behind, which
	// would slow every later cell with garbage collection.
	var rows []row
	for _, p := range []path{pathReplay, pathInProgress, pathMismatch, pathFirst} {
		if p == pathFirst && s.firstBegin != nil {
			if err := s.firstBegin(ctx); err != nil {
				return rows, err
			}
		}
		for _, g := range o.goroutines {
			r := row{backend: name, path: p, goroutines: g, hasSame: s.same != nil}
			began := time.Now()
			for round := range o.rounds {
				got := make([]sample, len(targets))
				for i := range targets {
					// Rotate the order: round 0 runs lib, raw, same; round 1
					// raw, same, lib; and so on.
					k := (i + round) % len(targets)
					smp, err := runCellRetry(ctx, targets[k], p, g, o.duration, log)
					if err != nil {
						return rows, fmt.Errorf("target %d %v g=%d: %w", k, p, g, err)
					}
					got[k] = smp
				}
				r.lib.Add(got[0])
				r.raw.Add(got[1])
				r.libRaw = append(r.libRaw, got[0].OpsPerSec()/max(got[1].OpsPerSec(), 1e-9))
				if s.same != nil {
					r.same.Add(got[2])
					r.libSame = append(r.libSame, got[0].OpsPerSec()/max(got[2].OpsPerSec(), 1e-9))
				}
			}
			line := fmt.Sprintf("%-8s %-15s g=%-3d library %9.0f ops/s  raw %9.0f ops/s  ratio %.2f", name, p, g, r.lib.OpsPerSec(), r.raw.OpsPerSec(), r.ratio())
			if s.same != nil {
				line += fmt.Sprintf("  same statements %9.0f ops/s  ratio %.2f", r.same.OpsPerSec(), r.sameRatio())
			}
			fmt.Fprintf(log, "%s  (%v)\n", line, time.Since(began).Round(time.Millisecond))
			rows = append(rows, r)
		}
		if p == pathFirst && s.firstEnd != nil {
			if err := s.firstEnd(ctx); err != nil {
				return rows, err
			}
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

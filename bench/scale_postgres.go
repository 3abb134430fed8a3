package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/postgres"
)

const (
	smallRows  = 10_000
	loadChunk  = 1_000_000
	claimers   = 4
	bulkScope  = "bulk"
	claimScope = "claims"
)

// The sizes of the scale scenarios; -scale-small divides them by 100 to
// check the scenarios quickly.
var (
	largeRows    int64 = 10_000_000
	sweepRows    int64 = 1_000_000
	memoryKeys         = 1_000_000
	redisRecords       = 50_000
	scaleCell          = 3 * time.Second
)

func shrinkScale() {
	largeRows, sweepRows, memoryKeys, redisRecords, scaleCell = largeRows/100, sweepRows/100, memoryKeys/100, redisRecords/100, scaleCell/10
}

// bulkLoad inserts rows first..last of scope into table in chunks of
// loadChunk, with INSERT … SELECT generate_series: completed rows with the
// benchmark's outcome that expire after a day, or an hour ago if expired.
func bulkLoad(ctx context.Context, r *pgRun, table string, first, last int64, expired bool, log io.Writer) (time.Duration, error) {
	expires := "clock_timestamp() + interval '1 day'"
	if expired {
		expires = "clock_timestamp() - interval '1 hour'"
	}
	sql := `INSERT INTO ` + r.table(table) + ` (scope, key, fingerprint, state, owner, outcome, expires_at)
SELECT $1::text, 'k' || g, $2::bytea, 2, 'bulk', $3::bytea, ` + expires + `
FROM generate_series($4::bigint, $5::bigint) g`
	start := time.Now()
	for lo := first; lo <= last; lo += loadChunk {
		hi := min(lo+loadChunk-1, last)
		if _, err := r.pool.Exec(ctx, sql, bulkScope, fpA, storedOutcome, lo, hi); err != nil {
			return 0, err
		}
		fmt.Fprintf(log, "postgres: %s loaded to row %d (%v)\n", table, hi, time.Since(start).Round(time.Second))
	}
	if _, err := r.pool.Exec(ctx, "VACUUM ANALYZE "+r.table(table)); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// claimTarget measures Store.Claim: pathFirst claims a fresh key (an
// insert), pathReplay a random existing completed row of 1..rows (a read).
func claimTarget(s *postgres.Store, rows *int64) *target {
	t := &target{}
	var keys keySeq
	claim := func(ctx context.Context, scope, key string) (backends.ClaimResult, error) {
		return s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Fingerprint: fpA, Owner: token(), Lease: lease, Retention: time.Hour})
	}
	t.Ops[pathFirst] = func(ctx context.Context) error {
		r, err := claim(ctx, claimScope, keys.Next(""))
		if err == nil && !r.Claimed {
			err = fmt.Errorf("fresh key not claimed")
		}
		return err
	}
	t.Ops[pathReplay] = func(ctx context.Context) error {
		r, err := claim(ctx, bulkScope, "k"+strconv.FormatInt(1+rand.Int64N(*rows), 10))
		if err == nil && r.Existing.State != backends.StateCompleted {
			err = fmt.Errorf("bulk row not completed: %+v", r)
		}
		return err
	}
	return t
}

func tableSize(ctx context.Context, r *pgRun, table string) string {
	var size string
	_ = r.pool.QueryRow(ctx, "SELECT pg_size_pretty(pg_total_relation_size($1::regclass))", r.table(table)).Scan(&size)
	return size
}

// scalePostgresRows compares claim latency on a table of 10 thousand rows
// and on the same table grown to 10 million.
func scalePostgresRows(ctx context.Context, w, log io.Writer) error {
	r, err := openPostgres(ctx, runID(), claimers+2)
	if err != nil {
		return err
	}
	defer r.close()
	const table = "scale_rows"
	s, err := r.store(ctx, table)
	if err != nil {
		return err
	}
	rows := int64(smallRows)
	t := claimTarget(s, &rows)
	fmt.Fprintf(w, "Store.Claim from %d goroutines, %v per cell, on one table (Migrate with Table %q): a fresh key (insert) and a random completed row (read).\n\n", claimers, scaleCell, table)
	fmt.Fprintln(w, "| rows | table size | claim of a fresh key | claim of an existing row |")
	fmt.Fprintln(w, "|--:|--:|---|---|")
	measure := func(n int64) error {
		fresh, err := runCell(ctx, t, pathFirst, claimers, scaleCell)
		if err != nil {
			return err
		}
		existing, err := runCell(ctx, t, pathReplay, claimers, scaleCell)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", rate(float64(n)), tableSize(ctx, r, table), latencyLine(fresh), latencyLine(existing))
		return nil
	}
	if _, err := bulkLoad(ctx, r, table, 1, smallRows, false, log); err != nil {
		return err
	}
	if err := measure(smallRows); err != nil {
		return err
	}
	took, err := bulkLoad(ctx, r, table, smallRows+1, largeRows, false, log)
	if err != nil {
		return err
	}
	rows = largeRows
	if err := measure(largeRows); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nLoading the other %s rows (INSERT … SELECT generate_series in 1M-row statements, then VACUUM ANALYZE) took %v. The table is dropped afterwards.\n\n", rate(float64(largeRows-smallRows)), took.Round(time.Second))
	return nil
}

// scalePostgresSweep measures claim latency on a table holding a million
// expired rows, without and then during Store.Sweep of those rows.
func scalePostgresSweep(ctx context.Context, w, log io.Writer) error {
	r, err := openPostgres(ctx, runID(), claimers+2)
	if err != nil {
		return err
	}
	defer r.close()
	const table = "scale_sweep"
	s, err := r.store(ctx, table)
	if err != nil {
		return err
	}
	if _, err := bulkLoad(ctx, r, table, 1, sweepRows, true, log); err != nil {
		return err
	}
	live := int64(1) // claims of existing rows are not measured here
	t := claimTarget(s, &live)
	quiet, err := runCell(ctx, t, pathFirst, claimers, scaleCell)
	if err != nil {
		return err
	}
	type sweepResult struct {
		n   int64
		err error
		d   time.Duration
	}
	done := make(chan sweepResult, 1)
	go func() {
		start := time.Now()
		n, err := s.Sweep(ctx)
		done <- sweepResult{n, err, time.Since(start)}
	}()
	var during sample
	var res sweepResult
	for finished := false; !finished; {
		c, err := runCell(ctx, t, pathFirst, claimers, 500*time.Millisecond)
		if err != nil {
			return err
		}
		during.Add(c)
		select {
		case res = <-done:
			finished = true
		default:
		}
	}
	if res.err != nil {
		return res.err
	}
	after, err := runCell(ctx, t, pathFirst, claimers, scaleCell)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s expired rows (Migrate with Table %q); Store.Sweep with the default batch of %d deleted %s rows in %v (%s rows/s) in one goroutine while %d goroutines claimed fresh keys in the same table.\n\n",
		rate(float64(sweepRows)), table, postgres.DefaultSweepBatchSize, rate(float64(res.n)), res.d.Round(time.Millisecond), rate(float64(res.n)/res.d.Seconds()), claimers)
	fmt.Fprintln(w, "| claims | throughput and latency |")
	fmt.Fprintln(w, "|---|---|")
	fmt.Fprintf(w, "| before the sweep | %s |\n| during the sweep | %s |\n| after the sweep | %s |\n\n", latencyLine(quiet), latencyLine(during), latencyLine(after))
	return nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// runScale runs the scale scenarios (-scale) and writes their figures to
// w as Markdown. A scenario whose server is unreachable is reported and
// skipped.
func runScale(ctx context.Context, w, log io.Writer) error {
	fmt.Fprintf(w, "## Scale scenarios\n\nStarted %s.\n\n", machine())
	for _, sc := range []struct {
		name string
		fn   func(context.Context, io.Writer, io.Writer) error
	}{
		{"memory store, 1 million live keys", scaleMemory},
		{"Redis memory per completed record", scaleRedis},
		{"PostgreSQL claim latency, 10 thousand vs 10 million rows", scalePostgresRows},
		{"PostgreSQL claims during a sweep of 1 million expired rows", scalePostgresSweep},
	} {
		fmt.Fprintf(log, "scale: %s\n", sc.name)
		fmt.Fprintf(w, "### %s\n\n", sc.name)
		start := time.Now()
		if err := sc.fn(ctx, w, log); err != nil {
			if ctx.Err() != nil {
				return err
			}
			fmt.Fprintf(w, "Failed or skipped: %v\n\n", err)
			continue
		}
		fmt.Fprintf(w, "(scenario took %v; load average %s)\n\n", time.Since(start).Round(time.Second), loadAvg())
	}
	return nil
}

// latencyLine formats a sample as ops/s, p50 and p99.
func latencyLine(s sample) string {
	return fmt.Sprintf("%s ops/s, p50 %s, p99 %s (%d ops)", rate(s.OpsPerSec()), dur(s.Lat.Quantile(0.5)), dur(s.Lat.Quantile(0.99)), s.Ops)
}

package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// writeTable prints rows as a Markdown table. The ratios are medians over
// the rounds of the per-round ratios; ops/s are totals over the rounds.
func writeTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| backend | path | goroutines | library ops/s | raw ops/s | library ÷ raw | same-statements ops/s | library ÷ same | library p50 / p99 | raw p50 / p99 | round trips/op (lib / raw) | allocs/op (lib / raw) |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		same, sameRatio := "–", "–"
		if r.hasSame {
			same, sameRatio = rate(r.same.opsPerSec()), fmt.Sprintf("%.2f", r.sameRatio())
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %.2f | %s | %s | %s / %s | %s / %s | %.2f / %.2f | %.1f / %.1f |\n",
			r.backend, r.path, r.goroutines,
			rate(r.lib.opsPerSec()), rate(r.raw.opsPerSec()), r.ratio(), same, sameRatio,
			dur(r.lib.lat.quantile(0.5)), dur(r.lib.lat.quantile(0.99)),
			dur(r.raw.lat.quantile(0.5)), dur(r.raw.lat.quantile(0.99)),
			r.lib.perOp(uint64(r.lib.trips)), r.raw.perOp(uint64(r.raw.trips)),
			r.lib.perOp(r.lib.mallocs), r.raw.perOp(r.raw.mallocs))
	}
}

func rate(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	// Thousands separators for readability.
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	default:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	}
}

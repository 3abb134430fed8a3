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
	fmt.Fprintln(w, "| backend | path | goroutines | library ops/s | raw ops/s | library ÷ raw | same-statements ops/s | library ÷ same | library p50 / p99 | raw p50 / p99 | round trips/op (lib / raw) | allocs/op (lib / raw) | CPU/op here + elsewhere (lib / raw) |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		same, sameRatio := "–", "–"
		if r.hasSame {
			same, sameRatio = rate(r.same.opsPerSec()), fmt.Sprintf("%.2f", r.sameRatio())
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %.2f | %s | %s | %s / %s | %s / %s | %.2f / %.2f | %.1f / %.1f | %s / %s |\n",
			r.backend, r.path, r.goroutines,
			rate(r.lib.opsPerSec()), rate(r.raw.opsPerSec()), r.ratio(), same, sameRatio,
			dur(r.lib.lat.quantile(0.5)), dur(r.lib.lat.quantile(0.99)),
			dur(r.raw.lat.quantile(0.5)), dur(r.raw.lat.quantile(0.99)),
			r.lib.perOp(uint64(r.lib.trips)), r.raw.perOp(uint64(r.raw.trips)),
			r.lib.perOp(r.lib.mallocs), r.raw.perOp(r.raw.mallocs),
			cpuPerOp(r.lib), cpuPerOp(r.raw))
	}
}

// cpuLegend explains the table's CPU column.
const cpuLegend = "CPU/op here + elsewhere: the CPU time per operation of this process (getrusage: the library or the baseline, the driver, the Go runtime) + of the rest of the machine (/proc/stat busy time less this process's: the server, and whatever else ran; 10 ms resolution, summed over the rounds). On a machine where nothing else runs, elsewhere is the server's cost of the operation, so the column splits a gap in throughput into the client's share and the server's. At the higher goroutine counts the two cores are saturated, and throughput follows the sum."

// cpuPerOp is a sample's CPU per operation in this process (the library or
// baseline, the driver, the runtime) + on the rest of the machine (the
// server, and whatever else ran): "12.1+7.3µs".
func cpuPerOp(s sample) string {
	if !s.cpu.ok || s.ops == 0 {
		return "–"
	}
	n := float64(s.ops)
	return fmt.Sprintf("%.1f+%.1fµs", float64(s.cpu.here)/n/1e3, float64(max(s.cpu.other, 0))/n/1e3)
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

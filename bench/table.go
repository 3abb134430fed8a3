package main

import (
	"fmt"
	"io"
)

// writeTable prints rows as a Markdown table. The ratios are medians over
// the rounds of the per-round ratios; ops/s are totals over the rounds.
func writeTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| backend | path | goroutines | library ops/s | raw ops/s | library ÷ raw | same-statements ops/s | library ÷ same | library p50 / p99 | raw p50 / p99 | round trips/op (lib / raw) | allocs/op (lib / raw) | CPU/op here + elsewhere (lib / raw) |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		same, sameRatio := "–", "–"
		if r.hasSame {
			same, sameRatio = rate(r.same.OpsPerSec()), fmt.Sprintf("%.2f", r.sameRatio())
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %.2f | %s | %s | %s / %s | %s / %s | %.2f / %.2f | %.1f / %.1f | %s / %s |\n",
			r.backend, r.path, r.goroutines,
			rate(r.lib.OpsPerSec()), rate(r.raw.OpsPerSec()), r.ratio(), same, sameRatio,
			dur(r.lib.Lat.Quantile(0.5)), dur(r.lib.Lat.Quantile(0.99)),
			dur(r.raw.Lat.Quantile(0.5)), dur(r.raw.Lat.Quantile(0.99)),
			r.lib.PerOp(uint64(r.lib.Trips)), r.raw.PerOp(uint64(r.raw.Trips)),
			r.lib.PerOp(r.lib.Mallocs), r.raw.PerOp(r.raw.Mallocs),
			cpuPerOp(r.lib), cpuPerOp(r.raw))
	}
}

// cpuLegend explains the table's CPU column.
const cpuLegend = "CPU/op here + elsewhere: the CPU time per operation of this process (getrusage: the library or the baseline, the driver, the Go runtime) + of the rest of the machine (/proc/stat busy time less this process's: the server, and whatever else ran; 10 ms resolution, summed over the rounds). On a machine where nothing else runs, elsewhere is the server's cost of the operation, so the column splits a gap in throughput into the client's share and the server's. At the higher goroutine counts the two cores are saturated, and throughput follows the sum."

// cpuPerOp is a sample's CPU per operation in this process (the library or
// baseline, the driver, the runtime) + on the rest of the machine (the
// server, and whatever else ran): "12.1+7.3µs".
func cpuPerOp(s sample) string {
	if !s.CPU.OK || s.Ops == 0 {
		return "–"
	}
	n := float64(s.Ops)
	return fmt.Sprintf("%.1f+%.1fµs", float64(s.CPU.Here)/n/1e3, float64(max(s.CPU.Other, 0))/n/1e3)
}

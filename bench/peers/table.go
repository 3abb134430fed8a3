package peers

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/stagedoor/once/bench/harness"
)

func numCPU() int { return runtime.NumCPU() }

// writeReport prints the summary (median ratio to raw and its spread per
// cell and target), then every target of every cell in full.
func writeReport(w io.Writer, cells []cell) {
	var names []string
	seen := map[string]bool{}
	for _, c := range cells {
		for _, n := range c.names[1:] {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	fmt.Fprint(w, "| cell | goroutines |")
	for _, n := range names {
		fmt.Fprintf(w, " %s ÷ raw |", n)
	}
	fmt.Fprint(w, "\n|---|--:|")
	for range names {
		fmt.Fprint(w, "--:|")
	}
	fmt.Fprintln(w)
	for _, c := range cells {
		fmt.Fprintf(w, "| %s %s | %d |", c.server, c.kind, c.goroutines)
		for _, n := range names {
			i := indexOf(c.names, n)
			if i < 0 {
				fmt.Fprint(w, " – |")
				continue
			}
			r := c.ratios(i)
			lo, hi := minMax(r)
			fmt.Fprintf(w, " %.2f (%.2f–%.2f) |", harness.Median(r), lo, hi)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "\nMedian of the per-round ratios of ops/s to raw, (min–max over the rounds).")
	fmt.Fprintln(w, "\n| cell | goroutines | target | ops/s | ÷ raw (min–max) | p50 / p99 | client CPU/op | server CPU/op | WAL/op | statements/op | allocs/op |")
	fmt.Fprintln(w, "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, c := range cells {
		for i, n := range c.names {
			m := c.got[i]
			r := c.ratios(i)
			lo, hi := minMax(r)
			ops := float64(max(m.Ops, 1))
			server, wal, stmts := "–", "–", "–"
			secs := m.Elapsed.Seconds()
			if m.serverOK && c.bg.serverOK {
				server = fmt.Sprintf("%.1fµs", max(float64(m.serverCPU)-c.bg.server*secs, 0)/ops/1e3)
			}
			client := max(float64(m.CPU.Here)-c.bg.client*secs, 0) / ops / 1e3
			if c.server == "postgres" {
				wal = fmt.Sprintf("%.0f B", float64(m.wal)/ops)
				if m.stmts > 0 {
					stmts = fmt.Sprintf("%.2f", float64(m.stmts)/ops)
				}
			}
			fmt.Fprintf(w, "| %s %s | %d | %s | %s | %.2f (%.2f–%.2f) | %s / %s | %.1fµs | %s | %s | %s | %.1f |\n",
				c.server, c.kind, c.goroutines, n, harness.Rate(m.OpsPerSec()), harness.Median(r), lo, hi,
				harness.Dur(m.Lat.Quantile(0.5)), harness.Dur(m.Lat.Quantile(0.99)),
				client, server, wal, stmts, m.PerOp(m.Mallocs))
		}
	}
	var bgs []string
	for _, c := range cells {
		if b := c.server + " " + c.bg.String(); !slices.Contains(bgs, b) {
			bgs = append(bgs, b)
		}
	}
	fmt.Fprintf(w, "\nBackground with no operation running (subtracted from the CPU columns, per second of each cell): %s.\n", strings.Join(bgs, "; "))
	fmt.Fprintln(w, "\nclient CPU/op: this process (getrusage), the library and its driver, net of the background. server CPU/op: PostgreSQL, the backends of the run's own database (/proc/<pid>/schedstat; the WAL writer and checkpointer are not counted); Redis, every thread of redis-server, which other users of the shared server also load. WAL/op: the records pg_walinspect finds between the flush positions before and after each cell that touch a relation of the run's database, with every record (commit included) of the transactions that wrote one; other databases' writes on the shared server are left out. statements/op: the statements the target's pgx pools sent during the cell (pgx's QueryTracer and BatchTracer on the client; BEGIN and COMMIT count, a batch counts each of its statements), over its operations; a peer with its own pool (DBOS) counts everything that pool sent, its background polling included; – where not counted (Redis, connections not taken from the run's pgx pools). allocs/op: runtime.MemStats.Mallocs of the whole process, including the harness's fresh-key strings (2 per first execution, every target).")
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

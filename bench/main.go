// Command bench measures once.Do against raw-driver baselines on every
// backend, and optionally the scale scenarios (-scale). Run it from the
// module root:
//
//	go run ./bench                 # table + plot into bench/results
//	go run ./bench -quick          # a few seconds, for CI
//	go run ./bench -scale          # also the scale scenarios (minutes)
//	go run ./bench -local-cache    # hot-key replay with a local cache (package localcache)
//
// See bench/README.md for what each column means.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := execute(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stop()
		os.Exit(1)
	}
}

func parseFlags(args []string, errOut io.Writer) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(errOut)
	var o options
	var backends, goroutines string
	var quick bool
	fs.DurationVar(&o.duration, "duration", time.Second, "measuring time of each cell (one target, path and goroutine count) per round")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; each runs the library then the baseline once per cell")
	fs.StringVar(&backends, "backends", "memory,postgres,redis,mysql,sqlite", "comma-separated backends (memory, postgres, redis, mysql, sqlite; empty: none, e.g. with -scale)")
	fs.StringVar(&goroutines, "goroutines", "1,16,64", "comma-separated goroutine counts")
	fs.StringVar(&o.out, "out", filepath.Join("bench", "results"), "directory for results.md and throughput.svg (empty: none)")
	fs.IntVar(&o.pgConns, "pg-conns", 16, "PostgreSQL and MariaDB pool size, shared by library and baseline")
	fs.StringVar(&o.mysqlClaims, "mysql-claims", "insert-first", "mysqlstore's claim order: insert-first (its default), read-first (Config.ReadFirstClaims) or one-call (Config.OneRoundTripClaims)")
	fs.BoolVar(&quick, "quick", false, "CI mode: 30ms cells, one round")
	fs.BoolVar(&o.scale, "scale", false, "also run the scale scenarios (several minutes; 10M PostgreSQL rows)")
	fs.BoolVar(&o.localCache, "local-cache", false, "measure only the hot-key replay: raw, once, and once with a local cache")
	small := fs.Bool("scale-small", false, "divide the scale scenarios' sizes by 100 (to check them quickly)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *small {
		shrinkScale()
	}
	if quick {
		o.duration, o.rounds = 30*time.Millisecond, 1
		profileOps = 20
	}
	for _, b := range strings.Split(backends, ",") {
		if b = strings.TrimSpace(b); b != "" {
			o.backends = append(o.backends, b)
		}
	}
	for _, s := range strings.Split(goroutines, ",") {
		g, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || g < 1 {
			fmt.Fprintf(errOut, "bad -goroutines %q\n", goroutines)
			return o, fmt.Errorf("bad -goroutines")
		}
		o.goroutines = append(o.goroutines, g)
	}
	switch o.mysqlClaims {
	case "insert-first", "read-first", "one-call":
	default:
		fmt.Fprintf(errOut, "bad -mysql-claims %q: want insert-first, read-first or one-call\n", o.mysqlClaims)
		return o, fmt.Errorf("bad -mysql-claims")
	}
	if o.rounds < 1 || o.duration <= 0 || o.pgConns < 1 {
		fmt.Fprintln(errOut, "-rounds, -duration and -pg-conns must be positive")
		return o, fmt.Errorf("bad flags")
	}
	return o, nil
}

// execute runs the benchmark, prints the table and writes the results:
// results.md and throughput.svg, and scale.md with -scale.
func execute(ctx context.Context, o options, out, log io.Writer) error {
	if o.localCache {
		return runLocalCache(ctx, o, out, log)
	}
	header := fmt.Sprintf("Measured %s; -duration %v -rounds %d -pg-conns %d -mysql-claims %s.", machine(), o.duration, o.rounds, o.pgConns, o.mysqlClaims)
	fmt.Fprintln(log, header)
	res, err := run(ctx, o, log)
	if err != nil {
		return err
	}
	rows, skipped := res.rows, res.skipped
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
	}
	if len(rows) > 0 {
		var md strings.Builder
		fmt.Fprintf(&md, "%s Load average at the end: %s.\n\n", header, loadAvg())
		writeTable(&md, rows)
		md.WriteString("\n" + cpuLegend + "\n")
		for _, n := range res.notes {
			md.WriteString("\n" + n)
		}
		for _, s := range skipped {
			fmt.Fprintf(&md, "\nSkipped: %v\n", s)
		}
		fmt.Fprint(out, md.String())
		if o.out != "" {
			if err := os.WriteFile(filepath.Join(o.out, "results.md"), []byte(md.String()), 0o644); err != nil {
				return err
			}
			if err := writePlot(filepath.Join(o.out, "throughput.svg"), rows); err != nil {
				return err
			}
		}
	}
	if !o.scale {
		return nil
	}
	var md strings.Builder
	if err := runScale(ctx, &md, log); err != nil {
		return err
	}
	fmt.Fprint(out, "\n"+md.String())
	if o.out == "" {
		return nil
	}
	return os.WriteFile(filepath.Join(o.out, "scale.md"), []byte(md.String()), 0o644)
}

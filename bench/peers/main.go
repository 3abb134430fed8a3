package peers

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/bench/harness"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// Main runs raw, once, DBOS and extra, interleaved, on the servers the
// flags name (with -steps: raw, once.Do with 0, 1 and 3 steps and DBOS
// workflows of 1 and 3 steps, on PostgreSQL, then extra), and prints the Markdown report to standard output (progress
// to standard error). It exits with status 1 when any operation answered
// wrongly or a server failed.
func Main(extra ...Peer) {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	all := []Peer{Raw, Once, DBOS}
	if o.Kinds != nil {
		all = stepPeers()
	}
	var peers []Peer
	for _, p := range append(all, extra...) {
		if p.Name == Raw.Name || o.Only == "" || slices.Contains(strings.Split(o.Only, ","), p.Name) {
			peers = append(peers, p)
		}
	}
	if err := Run(ctx, o, peers, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		stop()
		os.Exit(1)
	}
}

func parseFlags(args []string) (Options, error) {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	o := Options{}
	var servers, goroutines string
	var conns int
	var steps bool
	fs.BoolVar(&steps, "steps", false, "measure steps: once.Do with 0, 1 and 3 once.Steps beside DBOS workflows of 1 and 3 steps, first execution and replay on PostgreSQL")
	fs.StringVar(&o.Only, "peers", "", "comma-separated names of the peers to run besides raw (empty: all)")
	fs.DurationVar(&o.Duration, "duration", time.Second, "measuring time of each cell per target and round")
	fs.IntVar(&o.Rounds, "rounds", 5, "rounds; each runs every target once per cell, in a rotating order")
	fs.StringVar(&servers, "servers", "postgres,redis", "comma-separated: postgres, redis")
	fs.StringVar(&goroutines, "goroutines", "1,16", "comma-separated goroutine counts")
	fs.IntVar(&o.ReplayKeys, "replay-keys", 1000, "completed keys the replay cells go through")
	fs.IntVar(&conns, "pg-conns", 16, "PostgreSQL pool size of each peer")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.Conns = int32(conns)
	if steps {
		o.Kinds = map[string][]Kind{"postgres": {Replay, First}}
		if !setFlag(fs, "servers") {
			servers = "postgres"
		}
		if servers != "postgres" {
			return o, fmt.Errorf("-steps runs on postgres only")
		}
	}
	o.Servers = strings.Split(servers, ",")
	for s := range strings.SplitSeq(goroutines, ",") {
		g, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || g < 1 {
			return o, fmt.Errorf("bad -goroutines %q", goroutines)
		}
		o.Goroutines = append(o.Goroutines, g)
	}
	for _, s := range o.Servers {
		if _, ok := cellKinds[s]; !ok {
			return o, fmt.Errorf("bad -servers %q: want postgres, redis", servers)
		}
	}
	if o.Rounds < 1 || o.Duration <= 0 || o.ReplayKeys < 1 || conns < 1 {
		return o, fmt.Errorf("-rounds, -duration, -replay-keys and -pg-conns must be positive")
	}
	return o, nil
}

// setFlag reports whether the command line set flag name.
func setFlag(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// Run measures peers (the first is the ratios' denominator) and writes
// the report to out.
func Run(ctx context.Context, o Options, peers []Peer, out, log io.Writer) error {
	e := &Env{ID: harness.RunID(), Conns: o.Conns}
	defer e.close()
	started := time.Now()
	header := fmt.Sprintf("Measured %s; -duration %v -rounds %d -goroutines %v -pg-conns %d -replay-keys %d.", machine(), o.Duration, o.Rounds, o.Goroutines, o.Conns, o.ReplayKeys)
	fmt.Fprintln(log, header)
	keys := replayKeys(o.ReplayKeys)
	var cells []cell
	for _, server := range o.Servers {
		var pr probe
		var err error
		switch server {
		case "postgres":
			if err = openPostgres(ctx, e); err != nil {
				return fmt.Errorf("postgres: %w", err)
			}
			pr.cpu = pgBackends{database: "once_peers_" + e.ID}
			if pr.wal, err = newWALProbe(ctx, e.Pool); err != nil {
				return fmt.Errorf("postgres: %w", err)
			}
		case "redis":
			e.Redis = redis.NewClient(&redis.Options{Addr: serverenv.RedisAddr()})
			e.RedisPrefix = "once-peers:" + e.ID + ":"
			client := e.Redis
			e.OnClose(func() { deletePrefix(client, e.RedisPrefix) })
			pr.cpu = noServer{}
			info, err := e.Redis.Info(ctx, "server").Result()
			if err != nil {
				return fmt.Errorf("redis: %w", err)
			}
			if pid, ok := redisPID(info); ok {
				if _, err := os.Stat("/proc/" + pid + "/task"); err == nil {
					pr.cpu = redisServer{pid: pid}
				}
			}
		}
		b, err := build(ctx, server, e, peers, keys, log)
		if err != nil {
			return err
		}
		cs, err := runServer(ctx, server, b, pr, o, keys, log)
		if err != nil {
			return err
		}
		cells = append(cells, cs...)
	}
	var md strings.Builder
	fmt.Fprintf(&md, "%s Took %v; load average at the end: %s.\n\n", header, time.Since(started).Round(time.Second), loadAvg())
	writeReport(&md, cells)
	_, err := io.WriteString(out, md.String())
	return err
}

// deletePrefix removes every key under prefix (SCAN + UNLINK).
func deletePrefix(c *redis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 1000 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
	c.Close()
}

// machine and loadAvg describe where and under what load the figures
// were measured.
func machine() string {
	return fmt.Sprintf("%s, %d CPUs, load average %s", time.Now().UTC().Format("2006-01-02 15:04 MST"), numCPU(), loadAvg())
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func minMax(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	return slices.Min(xs), slices.Max(xs)
}

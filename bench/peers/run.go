package peers

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stagedoor/once/bench/harness"
)

// Kind is a cell's path.
type Kind int

const (
	First     Kind = iota // a fresh key per operation
	Replay                // completed keys in turn (ReplayKeys of them)
	HotReplay             // one completed key
	numKinds
)

var kindNames = [numKinds]string{"first execution", "replay", "replay, one hot key"}

func (k Kind) String() string { return kindNames[k] }

// Options are the run's parameters.
type Options struct {
	Duration   time.Duration // per cell, target and round
	Rounds     int
	Goroutines []int
	Servers    []string // "postgres", "redis"
	ReplayKeys int      // completed keys the Replay cells go through
	Conns      int32    // pool size of each PostgreSQL peer
	Only       string   // comma-separated peers to run besides raw; empty: all
	// Kinds are the cells of each server, in the order they run; nil:
	// cellKinds.
	Kinds map[string][]Kind
}

// kinds are the cells of server under o.
func (o Options) kinds(server string) []Kind {
	if k, ok := o.Kinds[server]; ok {
		return k
	}
	return cellKinds[server]
}

// cellKinds are the cells of each server, in the order they run: first
// executions last, since they leave keys behind.
var cellKinds = map[string][]Kind{
	"postgres": {Replay, HotReplay, First},
	"redis":    {Replay, First},
}

// measured is one target in one cell, summed over the rounds.
type measured struct {
	harness.Sample
	serverCPU time.Duration
	serverOK  bool
	wal       int64 // bytes, PostgreSQL only
	stmts     int64 // statements sent (PostgreSQL: stmtTracer)
	rates     []float64
}

// cell is one (server, kind, goroutines) with every target.
type cell struct {
	server     string
	kind       Kind
	goroutines int
	names      []string
	got        []measured // per target, in names' order; 0 is raw
	bg         background // the server's idle background, measured once
}

// ratios returns target i's per-round ratios to raw.
func (c *cell) ratios(i int) []float64 {
	out := make([]float64, len(c.got[i].rates))
	for r := range out {
		out[r] = c.got[i].rates[r] / max(c.got[0].rates[r], 1e-9)
	}
	return out
}

// built is one server's targets, with their keys.
type built struct {
	names   []string
	targets []*harness.Target
	fresh   []*harness.KeySeq
	turn    []*atomic.Uint64
	stmts   []*atomic.Int64 // statements each target's operations sent
}

// hotKey is the key of the hot-key replay cells (not harness.HotKey,
// which some targets complete when they are made).
const hotKey = "h"

// replayKeys are the keys every target completes before the cells.
func replayKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "r" + strconv.Itoa(i)
	}
	return keys
}

// build makes each peer's target on server and completes its replay keys
// and hot key.
func build(ctx context.Context, server string, e *Env, peers []Peer, keys []string, log io.Writer) (*built, error) {
	b := &built{}
	for _, p := range peers {
		mk := p.Postgres
		if server == "redis" {
			mk = p.Redis
		}
		if mk == nil {
			continue
		}
		stmts := new(atomic.Int64)
		e.Stmts = stmts
		t, err := mk(ctx, e)
		e.Stmts = nil
		if err != nil {
			return nil, fmt.Errorf("%s on %s: %w", p.Name, server, err)
		}
		if err := seed(ctx, t, append([]string{hotKey}, keys...)); err != nil {
			return nil, fmt.Errorf("%s on %s: seeding: %w", p.Name, server, err)
		}
		b.names = append(b.names, p.Name)
		b.targets = append(b.targets, t)
		b.fresh = append(b.fresh, new(harness.KeySeq))
		b.turn = append(b.turn, new(atomic.Uint64))
		b.stmts = append(b.stmts, stmts)
		fmt.Fprintf(log, "%s: %s ready\n", server, p.Name)
	}
	return b, nil
}

// seed completes keys with t.First from 8 goroutines, then replays each.
func seed(ctx context.Context, t *harness.Target, keys []string) error {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(keys); i += 8 {
				if err := t.First(ctx, keys[i]); err != nil {
					errs <- err
					return
				}
				if err := t.Replay(ctx, keys[i]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// op is target i's operation in a cell of kind k.
func (b *built) op(i int, k Kind, keys []string) func(context.Context) error {
	t := b.targets[i]
	switch k {
	case First:
		seq := b.fresh[i]
		return func(ctx context.Context) error { return t.First(ctx, seq.Next("")) }
	case Replay:
		turn := b.turn[i]
		return func(ctx context.Context) error { return t.Replay(ctx, keys[int(turn.Add(1)%uint64(len(keys)))]) }
	default:
		return func(ctx context.Context) error { return t.Replay(ctx, hotKey) }
	}
}

// probe reads what a server spent around a cell.
type probe struct {
	cpu serverCPU
	wal *walProbe // nil: not PostgreSQL
}

// runServer measures every cell of one server, the targets interleaved:
// each round runs every target once per cell, in an order that rotates
// from round to round.
func runServer(ctx context.Context, server string, b *built, pr probe, o Options, keys []string, log io.Writer) ([]cell, error) {
	n := len(b.targets)
	warm := min(o.Duration/4, 250*time.Millisecond)
	for _, k := range o.kinds(server) {
		for i := range n {
			if _, err := harness.RunOp(ctx, b.op(i, k, keys), &b.targets[i].Trips, max(o.Goroutines[len(o.Goroutines)-1], 1), warm); err != nil {
				return nil, fmt.Errorf("warm-up %s %v: %w", b.names[i], k, err)
			}
		}
	}
	bg := idle(ctx, pr, 2*time.Second)
	fmt.Fprintf(log, "%s idle: %v\n", server, bg)
	var cells []cell
	for _, k := range o.kinds(server) {
		for _, g := range o.Goroutines {
			c := cell{server: server, kind: k, goroutines: g, names: b.names, got: make([]measured, n), bg: bg}
			for round := range o.Rounds {
				for j := range n {
					i := (j + round) % n
					m, err := measure(ctx, b, i, k, g, pr, o, keys)
					if err != nil {
						return cells, fmt.Errorf("%s %s %v g=%d: %w", server, b.names[i], k, g, err)
					}
					got := &c.got[i]
					got.Add(m.Sample)
					got.serverCPU += m.serverCPU
					got.serverOK = m.serverOK && (round == 0 || got.serverOK)
					got.wal += m.wal
					got.stmts += m.stmts
					got.rates = append(got.rates, m.OpsPerSec())
				}
			}
			line := fmt.Sprintf("%-8s %-20s g=%-3d", server, k, g)
			for i := range n {
				line += fmt.Sprintf("  %s %.0f (%.2f)", b.names[i], c.got[i].OpsPerSec(), harness.Median(c.ratios(i)))
			}
			fmt.Fprintln(log, line)
			cells = append(cells, c)
		}
	}
	return cells, nil
}

// background is the CPU spent per second of wall time with no operation
// running: pool health checks, DBOS's queue polling and, on the server,
// its other users. Every cell's CPU figures are net of it (table.go).
type background struct {
	client, server float64 // nanoseconds per second
	serverOK       bool
}

// idle measures the background over d.
func idle(ctx context.Context, pr probe, d time.Duration) background {
	c0 := harness.ReadCPU()
	s0, ok0 := pr.cpu.read()
	t0 := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	c1 := harness.ReadCPU()
	s1, ok1 := pr.cpu.read()
	secs := time.Since(t0).Seconds()
	return background{
		client:   float64(harness.SpentBetween(c0, c1).Here) / secs,
		server:   float64(s1-s0) / secs,
		serverOK: ok0 && ok1,
	}
}

func (b background) String() string {
	server := "–"
	if b.serverOK {
		server = fmt.Sprintf("%.1f ms/s", b.server/1e6)
	}
	return fmt.Sprintf("client %.1f ms/s, server %s", b.client/1e6, server)
}

// measure runs one cell of target i, with the server's CPU and WAL around it.
func measure(ctx context.Context, b *built, i int, k Kind, g int, pr probe, o Options, keys []string) (measured, error) {
	var m measured
	var wal0 string
	if pr.wal != nil {
		var err error
		if wal0, err = pr.wal.position(ctx); err != nil {
			return m, err
		}
	}
	ctx = withStmts(ctx, b.stmts[i])
	stmts0 := b.stmts[i].Load()
	cpu0, ok0 := pr.cpu.read()
	s, err := harness.RunOp(ctx, b.op(i, k, keys), &b.targets[i].Trips, g, o.Duration)
	cpu1, ok1 := pr.cpu.read()
	m.stmts = b.stmts[i].Load() - stmts0
	if err != nil {
		return m, err
	}
	m.Sample, m.serverCPU, m.serverOK = s, cpu1-cpu0, ok0 && ok1
	if pr.wal != nil {
		if m.wal, err = pr.wal.bytesSince(ctx, wal0); err != nil {
			return m, err
		}
	}
	return m, nil
}

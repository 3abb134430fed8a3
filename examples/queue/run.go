package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/examples/internal/exstore"
)

// Timing of the scenario: a short lease so that a dead worker's claim is
// taken over quickly, and a min-idle for XAUTOCLAIM shorter than the lease
// so that the reclaiming worker meets the claim still in progress.
const (
	lease   = 2 * time.Second
	minIdle = time.Second
	work    = 150 * time.Millisecond
	orders  = 10
)

// line is one line of a worker's output.
type line struct {
	worker int
	text   string
}

// run produces the orders, starts the workers, kills two of them mid
// message, waits until every entry is acknowledged and checks that every
// order was billed exactly once.
func run(ctx context.Context, w io.Writer, cfg exstore.Config) error {
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	client, err := exstore.OpenClient(ctx, cfg.RedisAddr)
	if err != nil {
		return fmt.Errorf("this example needs Redis for its stream: %w", err)
	}
	defer client.Close()
	// The coordinator's store: it migrates the table (postgres) and drops
	// the records at the end. Workers open their own.
	_, closeStore, err := exstore.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	l, pool, err := openLedger(ctx, cfg, client)
	if err != nil {
		return err
	}
	if pool != nil {
		defer pool.Close()
		defer l.(pgLedger).drop(context.Background())
	}
	stream := streamKey(cfg)
	group := exstore.Unique("billing")
	dead := deadKey(cfg)
	defer client.Del(context.Background(), stream, billsKey(cfg), dead)
	if err := client.XGroupCreateMkStream(ctx, stream, group, "$").Err(); err != nil {
		return err
	}
	fmt.Fprintf(w, "store: %s\nstream %s, consumer group %s, lease %s, XAUTOCLAIM min-idle %s\n", cfg, stream, group, lease, minIdle)

	workerCfg := cfg
	workerCfg.Drop = false
	crashes := []string{crashInWork, crashBeforeAck, "", ""}
	victims := "worker-1 will die in the middle of the work, worker-2 before its XACK"
	if cfg.Kind == exstore.Postgres {
		crashes = []string{crashInWork, crashBeforeAck, crashAfterBill, ""}
		victims += ", worker-3 after the bill and before its commit"
	}
	lines := make(chan line, 64)
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(os.Interrupt)
		}
		for _, p := range procs {
			_ = p.Wait()
		}
	}()
	for i, crash := range crashes {
		s := spec{Name: fmt.Sprintf("worker-%d", i+1), Crash: crash, Stream: stream, Group: group, DeadLetters: dead,
			Store: workerCfg, Lease: lease, MinIdle: minIdle, Work: work}
		p, err := start(ctx, s, i, lines)
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	for ready := 0; ready < len(procs); {
		select {
		case l := <-lines:
			if strings.HasPrefix(l.text, "ready ") {
				ready++
			}
		case <-ctx.Done():
			return fmt.Errorf("workers not ready: %w", ctx.Err())
		}
	}
	fmt.Fprintf(w, "%d workers ready (%s)\n", len(procs), victims)

	lastID, err := produce(ctx, client, stream)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "producer: %d orders, order-05 sent twice, one entry without an order id: %d entries\n", orders, orders+2)

	kills := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case l := <-lines:
			if name, ok := strings.CutPrefix(l.text, "crash "); ok {
				fmt.Fprintf(w, "%s\n", name)
				fmt.Fprintf(w, "kill -9 worker-%d (pid %d)\n", l.worker+1, procs[l.worker].Process.Pid)
				if err := procs[l.worker].Process.Kill(); err != nil {
					return err
				}
				kills++
				continue
			}
			fmt.Fprintln(w, l.text)
		case <-tick.C:
			if done, err = settled(ctx, client, stream, group, lastID); err != nil {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("entries still pending: %w", ctx.Err())
		}
	}
	if want := len(crashes) - countEmpty(crashes); kills != want {
		return fmt.Errorf("%d workers killed, want %d: a victim got no message", kills, want)
	}
	deadEntries, err := client.XLen(ctx, dead).Result()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "dead-letter stream: %d entry\n", deadEntries)
	if deadEntries != 1 {
		return fmt.Errorf("%d dead-lettered entries, want 1", deadEntries)
	}
	return report(ctx, w, l)
}

func countEmpty(crashes []string) int {
	n := 0
	for _, c := range crashes {
		if c == "" {
			n++
		}
	}
	return n
}

// start starts a worker process; its output lines go to lines.
func start(ctx context.Context, s spec, i int, lines chan<- line) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), s.env())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- line{i, sc.Text()}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return cmd, nil
}

// produce adds the orders to the stream, order-05 twice, and an entry
// without an order id, and returns the last entry's ID.
func produce(ctx context.Context, client *redis.Client, stream string) (string, error) {
	id, err := client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{"amount", "1"}}).Result()
	if err != nil {
		return "", err
	}
	for i := 1; i <= orders; i++ {
		order := fmt.Sprintf("order-%02d", i)
		for range 1 + btoi(i == 5) {
			id, err = client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{"order", order, "amount", fmt.Sprint(1000 + i)}}).Result()
			if err != nil {
				return "", err
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return id, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// settled reports whether every entry was delivered and acknowledged.
func settled(ctx context.Context, client *redis.Client, stream, group, lastID string) (bool, error) {
	groups, err := client.XInfoGroups(ctx, stream).Result()
	if err != nil {
		return false, err
	}
	for _, g := range groups {
		if g.Name == group {
			return g.LastDeliveredID == lastID && g.Pending == 0, nil
		}
	}
	return false, fmt.Errorf("group %s not found", group)
}

// report prints the bills per order and fails unless each is exactly 1.
func report(ctx context.Context, w io.Writer, l ledger) error {
	counts, err := l.counts(ctx)
	if err != nil {
		return err
	}
	ids := make([]string, 0, orders)
	for i := 1; i <= orders; i++ {
		ids = append(ids, fmt.Sprintf("order-%02d", i))
	}
	sort.Strings(ids)
	fmt.Fprintln(w, "bills per order:")
	bad := 0
	for _, id := range ids {
		fmt.Fprintf(w, "  %s: %d\n", id, counts[id])
		if counts[id] != 1 {
			bad++
		}
	}
	if len(counts) != orders || bad > 0 {
		return fmt.Errorf("%d orders billed the wrong number of times", bad)
	}
	fmt.Fprintln(w, "every order billed exactly once; every entry acknowledged")
	return nil
}

// Command cron guards a nightly job that several instances start at the
// same moment: exactly one runs it per (job, date); the others report that
// it ran or is running.
//
//	go run ./examples/cron
//	go run ./examples/cron -store postgres   # or -store redis
//
// Each instance calls once.Do with the job's name as the scope and the date
// as the key. The run's summary is the stored outcome, so an instance that
// starts after the job finished reports it without running it again.
//
// On the default in-memory store the instances are goroutines sharing one
// Keeper, which is all a memory store can guard. With -store postgres or
// -store redis every instance has its own Keeper over the shared store, as
// separate processes would, and the store alone decides who runs the job.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/examples/internal/exstore"
)

func main() {
	cfg := exstore.RegisterFlags(flag.CommandLine, exstore.Memory)
	flag.Parse()
	cfg.Name, cfg.Drop = exstore.Unique("cron"), true
	if err := run(context.Background(), os.Stdout, 5, *cfg); err != nil {
		fmt.Fprintln(os.Stderr, "cron:", err)
		os.Exit(1)
	}
}

type summary struct {
	Instance string `json:"instance"`
	Rows     int    `json:"rows"`
}

// job is the nightly work; runs counts how often it really ran per date.
type job struct {
	mu   sync.Mutex
	runs map[string]int
}

func (j *job) deleteExpiredHolds(ctx context.Context, instance, date string) (summary, error) {
	j.mu.Lock()
	j.runs[date]++
	j.mu.Unlock()
	select {
	case <-time.After(300 * time.Millisecond): // the work
	case <-ctx.Done():
		return summary{}, ctx.Err()
	}
	return summary{Instance: instance, Rows: 1280}, nil
}

// instance is one replica of the service firing the job from its own
// scheduler.
func instance(ctx context.Context, k *once.Keeper, j *job, name, date string) string {
	out, err := once.DoOutcome(ctx, k.Scope("job:delete-expired-holds"), date, nil,
		func(ctx context.Context) (summary, error) { return j.deleteExpiredHolds(ctx, name, date) })
	switch {
	case errors.Is(err, once.ErrInProgress):
		return name + ": already running elsewhere; skipped"
	case err != nil:
		return name + ": failed: " + err.Error()
	case out.Status == once.Replayed:
		return fmt.Sprintf("%s: already ran on %s (by %s, %d rows); skipped", name, date, out.Value.Instance, out.Value.Rows)
	default:
		return fmt.Sprintf("%s: ran the job for %s, %d rows", name, date, out.Value.Rows)
	}
}

// run fires the job on instances instances at once, two nights in a row,
// on the store of cfg, and checks that it ran once per night.
func run(ctx context.Context, w io.Writer, instances int, cfg exstore.Config) error {
	store, closeStore, err := exstore.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	fmt.Fprintln(w, "store:", cfg)
	shared := once.New(store, once.WithLease(10*time.Second))
	// keeper is an instance's Keeper: its own over a durable store, as a
	// separate process would have; the one shared Keeper over memory.
	keeper := func() *once.Keeper {
		if cfg.Durable() {
			return once.New(store, once.WithLease(10*time.Second))
		}
		return shared
	}
	j := &job{runs: map[string]int{}}
	dates := []string{"2026-11-29", "2026-11-30"}
	for _, date := range dates {
		fmt.Fprintf(w, "night of %s: %d instances fire at once\n", date, instances)
		lines := make([]string, instances)
		var wg sync.WaitGroup
		for i := range instances {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lines[i] = instance(ctx, keeper(), j, fmt.Sprintf("instance-%d", i+1), date)
			}()
		}
		wg.Wait()
		sort.Strings(lines)
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
		fmt.Fprintln(w, "  a late instance starts:")
		fmt.Fprintln(w, "  "+instance(ctx, keeper(), j, "instance-late", date))
	}
	fmt.Fprintln(w, "runs per date:")
	for _, date := range dates {
		fmt.Fprintf(w, "  %s: %d\n", date, j.runs[date])
		if j.runs[date] != 1 {
			return fmt.Errorf("the job ran %d times on %s", j.runs[date], date)
		}
	}
	return nil
}

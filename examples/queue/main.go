// Command queue is an at-least-once consumer of a Redis Stream that bills
// each order once: a producer XADDs the orders (one of them twice, as a
// producer retrying after a timeout would), a consumer group of four worker
// processes reads them with XREADGROUP, and each worker wraps the bill in
// once.Do (scope: the consumer group; key: the order's id) and XACKs after
// Do returns. Two workers are killed with SIGKILL in the middle of a
// message: one after claiming the key and before billing, one after billing
// and before its XACK. The survivors reclaim their pending entries with
// XAUTOCLAIM: the first is taken over when the dead worker's 2-second
// lease ends (the survivor waits for it with once.WithWait), the second is
// replayed. Every order is billed exactly once.
//
// This example needs Redis, for the stream and by default for the records
// and the bills:
//
//	go run ./examples/queue                    # Redis at ONCE_REDIS_ADDR or 127.0.0.1:6379
//	go run ./examples/queue -store postgres    # records and bills in PostgreSQL
//
// The workers are this same binary started again with ONCE_QUEUE_WORKER
// set. -store memory is refused: separate processes share no memory.
//
// The kill points are the two where once alone guarantees one bill. A kill
// between the bill and the recording of the outcome would bill again after
// the lease, as any at-least-once consumer would: close that window with an
// effect fenced by a key the downstream deduplicates (once.DerivedKey) or
// with postgres.DoTx, which commits the bill and the outcome together.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/stagedoor/once/examples/internal/exstore"
)

func main() {
	if s := os.Getenv(workerEnv); s != "" {
		os.Exit(workerMain(s))
	}
	cfg := exstore.RegisterFlags(flag.CommandLine, exstore.Redis)
	flag.Parse()
	cfg.Name, cfg.Drop = exstore.Unique("queue"), true
	if err := run(context.Background(), os.Stdout, *cfg); err != nil {
		fmt.Fprintln(os.Stderr, "queue:", err)
		os.Exit(1)
	}
}

// workerMain runs a worker process described by the JSON spec js until
// SIGINT or SIGTERM (or SIGKILL).
func workerMain(js string) int {
	var s spec
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		fmt.Fprintln(os.Stderr, "queue worker:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runWorker(ctx, s, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "queue worker %s: %v\n", s.Name, err)
		return 1
	}
	return 0
}

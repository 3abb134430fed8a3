// Command queue is an at-least-once consumer of a Redis Stream that bills
// each order once: a producer XADDs the orders (one of them twice, as a
// producer retrying after a timeout would) and one entry without an order
// id, a consumer group of four worker processes reads them with
// XREADGROUP, and each worker runs the bill under consume.Do (scope: the
// consumer group; key: the order's id) and settles the entry as the
// decision says: Ack → XACK, RetryLater → left pending for XAUTOCLAIM,
// DeadLetter → XADD to a dead-letter stream and XACK. Workers are killed
// with SIGKILL in the middle of a message: one after claiming the key and
// before billing, one after billing and before its XACK, and with
// PostgreSQL one after the bill and before its commit. The survivors
// reclaim the pending entries with XAUTOCLAIM: a claim left by a dead
// worker is taken over when its 2-second lease ends (Redis; the survivor
// waits with once.WithWait) or was never committed (PostgreSQL), the
// billed one is replayed. Every order is billed exactly once.
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
// With PostgreSQL the bill is written in the transaction of the claim
// (consume.ValueTx over the postgres Store's BeginTx, the mechanism
// of once.DoTx), so a kill between the bill and the recording of the
// outcome rolls both back. With Redis the bill and the outcome are separate
// writes: a kill between them would bill again after the lease, as any
// at-least-once consumer would, so the Redis run kills only at the two
// points where once alone guarantees one bill.
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

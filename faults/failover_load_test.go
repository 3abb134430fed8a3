package faults

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// failoverLoad is the clients of TestPostgresFailover. Each takes the next
// call from a list in which every key comes twice in a row (a request and
// its duplicate, sent at about the same time) and repeats it until Do
// answers, as a client retries.
type failoverLoad struct {
	acked atomic.Int64

	mu         sync.Mutex
	acks       []event
	leaseLost  []event // Do returned ErrLeaseLost
	unrecorded []event // Do returned ErrOutcomeUnrecorded
	errKinds   map[string]int
	left       []string // keys of the calls not answered before the context ended
}

func newFailoverLoad() *failoverLoad { return &failoverLoad{errKinds: map[string]int{}} }

// run makes the calls with failoverClients goroutines, each with its own
// callFunc, until every call is answered or ctx ends.
func (l *failoverLoad) run(ctx context.Context, keys []string, client func(self string) callFunc) {
	calls := make(chan string, 2*len(keys))
	for _, k := range keys {
		calls <- k
		calls <- k
	}
	close(calls)
	var wg sync.WaitGroup
	for i := range failoverClients {
		self := fmt.Sprintf("c%d", i)
		call := client(self)
		wg.Go(func() {
			for key := range calls {
				l.answer(ctx, self, call, key)
			}
		})
	}
	wg.Wait()
}

// answer repeats one call until Do answers or ctx ends.
func (l *failoverLoad) answer(ctx context.Context, self string, call callFunc, key string) {
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, replayed, err := call(cctx, key)
		cancel()
		if err == nil {
			l.mu.Lock()
			l.acks = append(l.acks, event{Ev: "ack", Key: key, Value: v, Worker: self, Replayed: replayed})
			l.mu.Unlock()
			l.acked.Add(1)
			return
		}
		kind := errKind(err)
		e := event{Ev: "err", Key: key, Kind: kind, Worker: self}
		l.mu.Lock()
		switch kind {
		case "in_progress":
		case "lease_lost":
			l.leaseLost = append(l.leaseLost, e)
		case "unrecorded":
			l.unrecorded = append(l.unrecorded, e)
		}
		if kind != "in_progress" {
			l.errKinds[kind]++
		}
		if ctx.Err() != nil {
			l.left = append(l.left, key)
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		if kind == "in_progress" {
			time.Sleep(5 * time.Millisecond)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

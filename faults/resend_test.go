package faults

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// liftOnRedial is a go-redis hook that calls lift when, once armed, the
// client dials a new connection: go-redis redials to re-send a command
// whose connection broke, so lifting the fault there makes the re-send
// (and only the re-send) get through — the interleaving forced, not timed.
type liftOnRedial struct {
	lift   func()
	armed  atomic.Bool
	lifted atomic.Bool
}

func (h *liftOnRedial) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if h.armed.CompareAndSwap(true, false) {
			h.lift()
			h.lifted.Store(true)
		}
		return next(ctx, network, addr)
	}
}

func (h *liftOnRedial) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *liftOnRedial) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// scriptCalls is how many EVAL and EVALSHA commands the server has run
// (INFO commandstats), to count the executions a client never heard of.
func scriptCalls(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	return commandCalls(t, c, "evalsha", "eval")
}

// commandCalls is how many of the named commands the server has run (INFO
// commandstats; a command a script calls counts too).
func commandCalls(t *testing.T, c *redis.Client, names ...string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want["cmdstat_"+n] = true
	}
	var n int64
	for line := range strings.Lines(info) {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !want[name] {
			continue
		}
		for field := range strings.SplitSeq(stats, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				calls, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("INFO commandstats: %q: %v", line, err)
				}
				n += calls
			}
		}
	}
	return n
}

package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

// scaleMemory loads a memory store with a million completed keys through
// once.Do and reports the resident memory it took and the cost of a first
// execution and a replay once it holds them.
func scaleMemory(ctx context.Context, w, log io.Writer) error {
	runtime.GC()
	rss0, heap0 := vmRSS(), heapInuse()
	k := once.New(memory.New(nil), once.WithRetention(time.Hour))
	sc := k.Scope("scale")
	start := time.Now()
	for i := range memoryKeys {
		if _, err := once.Do(ctx, sc, "k"+strconv.Itoa(i), fpA, charge); err != nil {
			return err
		}
	}
	load := time.Since(start)
	runtime.GC()
	rss1, heap1 := vmRSS(), heapInuse()
	fmt.Fprintf(log, "memory: loaded %d keys in %v\n", memoryKeys, load)

	t := &target{}
	var keys keySeq
	t.Ops[pathFirst] = func(ctx context.Context) error {
		_, err := once.Do(ctx, sc, keys.Next("n"), fpA, charge)
		return err
	}
	t.Ops[pathReplay] = func(ctx context.Context) error {
		_, err := once.Do(ctx, sc, "k"+strconv.Itoa(rand.IntN(memoryKeys)), fpA, charge)
		return err
	}
	first, err := runCell(ctx, t, pathFirst, 1, 2*time.Second)
	if err != nil {
		return err
	}
	replay, err := runCell(ctx, t, pathReplay, 1, 2*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "- Load of %d first executions (1 goroutine): %v, %.0f ns/op.\n", memoryKeys, load.Round(time.Millisecond), float64(load.Nanoseconds())/float64(memoryKeys))
	fmt.Fprintf(w, "- VmRSS %s → %s: **%.0f bytes per live key** (Go heap in use %.0f bytes per key), with a %d-byte stored outcome and a %d-byte fingerprint per key.\n",
		mib(rss0), mib(rss1), float64(rss1-rss0)/float64(memoryKeys), float64(heap1-heap0)/float64(memoryKeys), len(storedOutcome), len(fpA))
	fmt.Fprintf(w, "- At %d live keys, 1 goroutine: first execution %.0f ns/op (%.1f allocs/op), replay of a random key %.0f ns/op (%.1f allocs/op).\n\n",
		memoryKeys, 1e9/first.OpsPerSec(), first.PerOp(first.Mallocs), 1e9/replay.OpsPerSec(), replay.PerOp(replay.Mallocs))
	runtime.KeepAlive(k)
	return nil
}

// vmRSS returns the process's resident set size in bytes, from
// /proc/self/status.
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func heapInuse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

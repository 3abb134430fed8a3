package main

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// sample is what one or more cells measured for one target.
type sample struct {
	ops     uint64
	elapsed time.Duration
	mallocs uint64
	trips   int64
	cpu     cpuSpent
	lat     *hist
}

func (s *sample) add(o sample) {
	if s.lat == nil { // the first sample added
		s.lat = new(hist)
		s.cpu.ok = true
	}
	s.ops += o.ops
	s.elapsed += o.elapsed
	s.mallocs += o.mallocs
	s.trips += o.trips
	s.cpu.here += o.cpu.here
	s.cpu.other += o.cpu.other
	s.cpu.ok = s.cpu.ok && o.cpu.ok
	s.lat.merge(o.lat)
}

func (s *sample) opsPerSec() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.ops) / s.elapsed.Seconds()
}

func (s *sample) perOp(n uint64) float64 {
	if s.ops == 0 {
		return 0
	}
	return float64(n) / float64(s.ops)
}

// runCell runs op from g goroutines for d and measures throughput,
// latency, allocations (runtime.MemStats.Mallocs: the whole process, so
// drivers and the harness's own key strings included) and the target's
// round trips. The first error stops the cell and is returned.
func runCell(ctx context.Context, t *target, p path, g int, d time.Duration) (sample, error) {
	op := t.ops[p]
	hists := make([]hist, g)
	ops := make([]uint64, g)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var stop atomic.Bool
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(g)
	done.Add(g)
	for w := range g {
		go func() {
			defer done.Done()
			h := &hists[w]
			n := uint64(0)
			ready.Done()
			<-start
			for !stop.Load() {
				t0 := time.Now()
				if err := op(ctx); err != nil {
					cancel(err)
					stop.Store(true)
					break
				}
				h.record(time.Since(t0))
				n++
			}
			ops[w] = n
		}()
	}
	ready.Wait()
	// No forced GC here: on a heap of millions of records (after the memory
	// store's first executions) it costs seconds per cell. Collections fall
	// where they fall, on both targets alike.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	trips0 := t.trips.Load()
	cpu0 := readCPU()
	t0 := time.Now()
	close(start)
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	done.Wait()
	elapsed := time.Since(t0)
	cpu1 := readCPU()
	timer.Stop()
	runtime.ReadMemStats(&after)
	s := sample{elapsed: elapsed, mallocs: after.Mallocs - before.Mallocs, trips: t.trips.Load() - trips0, cpu: spentBetween(cpu0, cpu1), lat: new(hist)}
	for w := range g {
		s.ops += ops[w]
		s.lat.merge(&hists[w])
	}
	if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
		return s, err
	}
	return s, nil
}

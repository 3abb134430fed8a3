package harness

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Sample is what one or more cells measured for one target.
type Sample struct {
	Ops     uint64
	Elapsed time.Duration
	Mallocs uint64
	Trips   int64
	CPU     CPUSpent
	Lat     *Hist
}

func (s *Sample) Add(o Sample) {
	if s.Lat == nil { // the first sample added
		s.Lat = new(Hist)
		s.CPU.OK = true
	}
	s.Ops += o.Ops
	s.Elapsed += o.Elapsed
	s.Mallocs += o.Mallocs
	s.Trips += o.Trips
	s.CPU.Here += o.CPU.Here
	s.CPU.Other += o.CPU.Other
	s.CPU.OK = s.CPU.OK && o.CPU.OK
	s.Lat.Merge(o.Lat)
}

func (s *Sample) OpsPerSec() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Ops) / s.Elapsed.Seconds()
}

func (s *Sample) PerOp(n uint64) float64 {
	if s.Ops == 0 {
		return 0
	}
	return float64(n) / float64(s.Ops)
}

// RunCell runs t.Ops[p] from g goroutines for d and measures throughput,
// latency, allocations (runtime.MemStats.Mallocs: the whole process, so
// drivers and the harness's own key strings included) and the target's
// round trips. The first error stops the cell and is returned.
func RunCell(ctx context.Context, t *Target, p Path, g int, d time.Duration) (Sample, error) {
	return RunOp(ctx, t.Ops[p], &t.Trips, g, d)
}

// RunOp runs op from g goroutines for d and measures it as RunCell does;
// trips is the counter of round trips that op increments.
func RunOp(ctx context.Context, op func(context.Context) error, trips *atomic.Int64, g int, d time.Duration) (Sample, error) {
	hists := make([]Hist, g)
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
				h.Record(time.Since(t0))
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
	trips0 := trips.Load()
	cpu0 := ReadCPU()
	t0 := time.Now()
	close(start)
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	done.Wait()
	elapsed := time.Since(t0)
	cpu1 := ReadCPU()
	timer.Stop()
	runtime.ReadMemStats(&after)
	s := Sample{Elapsed: elapsed, Mallocs: after.Mallocs - before.Mallocs, Trips: trips.Load() - trips0, CPU: SpentBetween(cpu0, cpu1), Lat: new(Hist)}
	for w := range g {
		s.Ops += ops[w]
		s.Lat.Merge(&hists[w])
	}
	if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
		return s, err
	}
	return s, nil
}

package memory_test

import (
	"testing"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/memory"
)

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(testing.TB) backends.Store { return memory.New(nil) })
}

func TestConformanceShared(t *testing.T) {
	shared := memory.New(nil)
	backendtest.Run(t, func(testing.TB) backends.Store { return shared })
}

func BenchmarkStore(b *testing.B) {
	backendtest.Benchmark(b, func(testing.TB) backends.Store { return memory.New(nil) })
}

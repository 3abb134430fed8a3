package localcache_test

import (
	"testing"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/localcache"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/internal/testservers"
)

// The cache changes no answer of the store it fronts: the conformance
// suite passes on it over the memory store, with the default bounds and
// with a cache small enough to evict all the time, and with one cache
// shared by every behaviour.
func TestConformance(t *testing.T) {
	for name, cfg := range map[string]localcache.Config{
		"Default": {},
		"Tiny":    {MaxEntries: 2, MaxBytes: 1024},
	} {
		t.Run(name, func(t *testing.T) {
			backendtest.Run(t, func(tb testing.TB) backends.Store { return cached(tb, memory.New(nil), cfg) })
		})
	}
	t.Run("Shared", func(t *testing.T) {
		shared := cached(t, memory.New(nil), localcache.Config{})
		backendtest.Run(t, func(testing.TB) backends.Store { return shared })
	})
}

// The cache changes no answer of the servers either, whose clocks are
// not the cache's: one store of each, behind one cache shared by every
// behaviour.
func TestConformanceOnServers(t *testing.T) {
	for _, name := range []string{"postgres", "redis"} {
		t.Run(name, func(t *testing.T) {
			shared := cached(t, testservers.Stores()[name](t), localcache.Config{})
			backendtest.Run(t, func(testing.TB) backends.Store { return shared })
		})
	}
}

package mysqlstore

import (
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

func TestConformance(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

// TestConformanceClientFoundRows runs the suite with the driver's
// clientFoundRows flag, which changes what affected-rows counts mean.
func TestConformanceClientFoundRows(t *testing.T) {
	if testing.Short() {
		t.Skip("a variant of TestConformance; -short runs the default only")
	}
	s := newStore(t, newDB(t, func(c *mysql.Config) { c.ClientFoundRows = true }), Config{})
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

// TestConformanceOneRoundTrip runs the suite with the claim procedure.
func TestConformanceOneRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("a variant of TestConformance; -short runs the default only")
	}
	s := newStore(t, newDB(t, nil), Config{OneRoundTripClaims: true})
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

// TestConformanceReadFirst runs the suite with the read-first order.
func TestConformanceReadFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("a variant of TestConformance; -short runs the default only")
	}
	s := newStore(t, newDB(t, nil), Config{ReadFirstClaims: true})
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

func BenchmarkStore(b *testing.B) {
	s := newStore(b, newDB(b, nil), Config{})
	backendtest.Benchmark(b, func(testing.TB) backends.Store { return s })
}

func BenchmarkStoreOneRoundTrip(b *testing.B) {
	s := newStore(b, newDB(b, nil), Config{OneRoundTripClaims: true})
	backendtest.Benchmark(b, func(testing.TB) backends.Store { return s })
}

func BenchmarkStoreReadFirst(b *testing.B) {
	s := newStore(b, newDB(b, nil), Config{ReadFirstClaims: true})
	backendtest.Benchmark(b, func(testing.TB) backends.Store { return s })
}

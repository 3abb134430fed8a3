package harness

import (
	"testing"
	"time"
)

func TestHistQuantile(t *testing.T) {
	var h Hist
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}} {
		got := h.Quantile(c.q)
		if d := got - c.want; d < -c.want/50 || d > c.want/50 {
			t.Errorf("q%.2f = %v, want %v ±2%%", c.q, got, c.want)
		}
	}
	for _, v := range []uint64{0, 1, 63, 64, 65, 127, 128, 1000, 1 << 40} {
		if i := bucket(v); lower(i) > v || lower(i+1) <= v {
			t.Errorf("bucket(%d) = %d: [%d, %d)", v, i, lower(i), lower(i+1))
		}
	}
}

package sqlstore

import (
	"math"
	"testing"
	"time"
)

func TestMicros(t *testing.T) {
	for _, c := range []struct {
		d         time.Duration
		want, age int64
	}{
		{-time.Hour, 1, 0},
		{0, 1, 0},
		{time.Nanosecond, 1, 1},
		{time.Microsecond, 1, 1},
		{time.Microsecond + time.Nanosecond, 2, 2},
		{math.MaxInt64, math.MaxInt64/1000 + 1, math.MaxInt64/1000 + 1},
	} {
		if got := Micros(c.d); got != c.want {
			t.Errorf("Micros(%v) = %d, want %d", c.d, got, c.want)
		}
		if got := AgeMicros(c.d); got != c.age {
			t.Errorf("AgeMicros(%v) = %d, want %d", c.d, got, c.age)
		}
	}
	for _, c := range []struct {
		us   int64
		want time.Duration
	}{
		{1, time.Microsecond},
		{-1, -time.Microsecond},
		{math.MaxInt64, math.MaxInt64},
		{math.MinInt64, math.MinInt64},
	} {
		if got := FromMicros(c.us); got != c.want {
			t.Errorf("FromMicros(%d) = %v, want %v", c.us, got, c.want)
		}
	}
}

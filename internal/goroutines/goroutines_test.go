package goroutines

import (
	"regexp"
	"testing"
	"time"
)

func parked(stop <-chan struct{}) { <-stop }

// TestFindsAGoroutineAndItsEnd: a goroutine started after the snapshot is
// found by its frame, one that existed before is not reported by Since,
// and a goroutine that ended is no longer found.
func TestFindsAGoroutineAndItsEnd(t *testing.T) {
	frame := regexp.MustCompile(`(?m)^github\.com/stagedoor/once/internal/goroutines\.parked\(`)
	old := make(chan struct{})
	go parked(old)
	waitFor(t, func() bool { return len(Matching(frame)) == 1 })
	before := Matching(frame)
	if got := Since(before, frame); len(got) != 0 {
		t.Fatalf("Since reports a goroutine of the snapshot: %v", got)
	}
	stop := make(chan struct{})
	go parked(stop)
	waitFor(t, func() bool { return len(Since(before, frame)) == 1 })
	close(stop)
	close(old)
	waitFor(t, func() bool { return len(Matching(frame)) == 0 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

package memory_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// BenchmarkListPage measures one page of List (the default 100 records,
// walking on from the previous page's cursor) in a store of 3 000 and of
// 300 000 records: all pending, or completed but for 1 000 held ones,
// listed by state. A page's cost must follow the page, not the store's
// size.
func BenchmarkListPage(b *testing.B) {
	for _, c := range []struct {
		name    string
		records int
		held    int // every records/held-th record is held, the others completed
		state   backends.State
	}{
		{name: "pending-3k", records: 3_000, state: backends.StatePending},
		{name: "pending-300k", records: 300_000, state: backends.StatePending},
		{name: "held-among-completed-3k", records: 3_000, held: 1_000, state: backends.StateHeld},
		{name: "held-among-completed-300k", records: 300_000, held: 1_000, state: backends.StateHeld},
	} {
		b.Run(c.name, func(b *testing.B) {
			records := c.records
			ctx := context.Background()
			s := memory.New(nil)
			for i := range records {
				p := backends.ClaimParams{Scope: "s" + strconv.Itoa(i%7), Key: "k" + strconv.Itoa(i), Owner: "o" + strconv.Itoa(i), Lease: time.Hour, Retention: time.Hour}
				if _, err := s.Claim(ctx, p); err != nil {
					b.Fatal(err)
				}
				switch {
				case c.held == 0:
				case i%(records/c.held) == 0:
					_, err := s.Hold(ctx, backends.HoldParams{Scope: p.Scope, Key: p.Key, Owner: p.Owner, For: time.Hour, Retention: time.Hour})
					if err != nil {
						b.Fatal(err)
					}
				default:
					_, err := s.Complete(ctx, backends.CompleteParams{Scope: p.Scope, Key: p.Key, Owner: p.Owner, Retention: time.Hour})
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			p := backends.ListParams{State: c.state}
			listed := 0
			for b.Loop() {
				page, err := s.List(ctx, p)
				if err != nil {
					b.Fatal(err)
				}
				listed += len(page.Records)
				p.Cursor = page.Next
			}
			b.ReportMetric(float64(listed)/float64(b.N), "records/page")
		})
	}
}

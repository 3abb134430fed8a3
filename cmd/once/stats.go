package main

import (
	"fmt"
)

type statsCmd struct{}

// statsView is what stats prints.
type statsView struct {
	Pending         int64 `json:"pending"`
	Held            int64 `json:"held"`
	Completed       int64 `json:"completed"`
	OldestPendingMS int64 `json:"oldest_pending_ms"`
	OldestHeldMS    int64 `json:"oldest_held_ms"`
	// Expired counts expired records waiting for a sweep (PostgreSQL);
	// Redis drops them itself.
	Expired int64 `json:"expired_waiting_for_sweep"`
	Stored  int64 `json:"stored_records"`
	Bytes   int64 `json:"stored_bytes,omitempty"`
}

func (s *statsCmd) Run(e *env) error {
	k, err := e.cli.selectBackend()
	if err != nil {
		return err
	}
	ctx, c, done, err := e.connect(k)
	if err != nil {
		return err
	}
	defer done()
	lister, err := c.lister("count")
	if err != nil {
		return err
	}
	n, err := lister.Count(ctx)
	if err != nil {
		return err
	}
	v := statsView{
		Pending: n.Pending, Held: n.Held, Completed: n.Completed,
		OldestPendingMS: n.OldestPending.Milliseconds(), OldestHeldMS: n.OldestHeld.Milliseconds(),
		Expired: n.Expired, Stored: n.Stored, Bytes: n.SizeBytes,
	}
	oldest := func(count, ageMS int64) string {
		if count == 0 {
			return ""
		}
		return "   oldest " + roundAge(ms(ageMS))
	}
	lines := []string{
		fmt.Sprintf("pending:    %d%s", v.Pending, oldest(v.Pending, v.OldestPendingMS)),
		fmt.Sprintf("held:       %d%s", v.Held, oldest(v.Held, v.OldestHeldMS)),
		fmt.Sprintf("completed:  %d", v.Completed),
		fmt.Sprintf("expired:    %d (waiting for a sweep)", v.Expired),
		fmt.Sprintf("stored:     %d records, %d bytes", v.Stored, v.Bytes),
	}
	return e.emit(v, lines...)
}

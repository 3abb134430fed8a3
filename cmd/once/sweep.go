package main

import (
	"fmt"
	"time"
)

type sweepCmd struct {
	Batch int           `default:"1000" help:"Expired rows deleted per statement (each its own short transaction)."`
	Loop  time.Duration `placeholder:"INTERVAL" help:"Sweep every INTERVAL until SIGINT or SIGTERM, instead of once."`
}

// sweepResult is one sweep's line of output.
type sweepResult struct {
	Table string `json:"table"`
	Swept int64  `json:"swept"`
	// At is set in --loop mode.
	At string `json:"at,omitempty"`
}

func (s *sweepCmd) Run(e *env) error {
	k, err := e.cli.selectBackend()
	if err != nil {
		return err
	}
	switch {
	case !k.sql():
		return usagef("sweep is for the SQL stores; Redis expires records by itself")
	case s.Batch <= 0:
		return usagef("--batch must be positive")
	case s.Loop < 0:
		return usagef("--loop must be positive")
	}
	e.cli.sweepBatch = s.Batch
	c, err := e.open(e.ctx, k)
	if err != nil {
		return err
	}
	defer c.Close()
	table := e.cli.tableName(k)
	sweep := func() (int64, error) {
		ctx, cancel := e.bounded()
		defer cancel()
		return c.sql.Sweep(ctx)
	}
	if s.Loop == 0 {
		n, err := sweep()
		if err != nil {
			return err
		}
		return e.emit(sweepResult{Table: table, Swept: n}, fmt.Sprintf("%s: swept %d expired records", quoteText(table), n))
	}
	t := time.NewTicker(s.Loop)
	defer t.Stop()
	for {
		n, err := sweep()
		switch {
		case e.ctx.Err() != nil:
			return nil // SIGINT or SIGTERM: a clean stop
		case err != nil:
			// A daemon keeps going; the next tick tries again.
			fmt.Fprintf(e.stderr, "once: %v\n", err)
		default:
			at := time.Now().UTC().Format(time.RFC3339)
			if err := e.emit(sweepResult{Table: table, Swept: n, At: at},
				fmt.Sprintf("%s %s: swept %d expired records", at, quoteText(table), n)); err != nil {
				return err
			}
		}
		select {
		case <-e.ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

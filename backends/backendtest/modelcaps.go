package backendtest

import (
	"context"

	"github.com/stagedoor/once/backends"
)

// The sweep methods of the stores that keep expired records: the SQL
// stores' Sweep(ctx, batchSize) and the memory store's Sweep().
type (
	batchSweeper interface {
		Sweep(ctx context.Context, batchSize int) (int64, error)
	}
	memorySweeper interface{ Sweep() int }
)

// capabilities are the optional interfaces of the store under test that
// the model drives, found with backends.As (on a decorator, on the store
// it wraps). This is the one place the model asserts them: an operation
// whose interface the store lacks is skipped (see runs).
type capabilities struct {
	admin  backends.Admin  // Delete, Get
	lister backends.Lister // List, Count
	sweep  func(ctx context.Context) (int64, error)
	// ages reports that the store records Record.Age (a Lister does).
	ages bool
}

func capabilitiesOf(s backends.Store) capabilities {
	var c capabilities
	c.admin, _ = backends.As[backends.Admin](s)
	c.lister, _ = backends.As[backends.Lister](s)
	c.ages = c.lister != nil
	if sw, ok := backends.As[batchSweeper](s); ok {
		c.sweep = func(ctx context.Context) (int64, error) { return sw.Sweep(ctx, 0) }
	} else if sw, ok := backends.As[memorySweeper](s); ok {
		c.sweep = func(context.Context) (int64, error) { return int64(sw.Sweep()), nil }
	}
	return c
}

// runs reports whether the store has what an operation of kind needs.
func (c capabilities) runs(kind opKind) bool {
	switch kind {
	case opDelete, opGet:
		return c.admin != nil
	case opList, opCount:
		return c.lister != nil
	case opSweep:
		return c.sweep != nil
	default:
		return true
	}
}

package backendtest

import (
	"context"

	"github.com/stagedoor/once/backends"
)

// sweeper is the Sweep method of every store that keeps expired records.
type sweeper interface {
	Sweep(ctx context.Context) (int64, error)
}

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
	if sw, ok := backends.As[sweeper](s); ok {
		c.sweep = sw.Sweep
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

package faults

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeepSections: a rewrite of RESULTS.md keeps the sections the run
// did not generate, after the generated ones, and replaces those it did.
func TestKeepSections(t *testing.T) {
	old := "# Results\n\nold totals\n\n## Held keys\n\nhand-written\n\n## PostgreSQL failover\n\nold failover\n\n## Steps\n\nsteps text\n"
	md := "# Results\n\nnew totals\n\n## PostgreSQL failover\n\nnew failover\n"
	require.Equal(t, "# Results\n\nnew totals\n\n## PostgreSQL failover\n\nnew failover\n\n## Held keys\n\nhand-written\n\n## Steps\n\nsteps text\n", keepSections(md, old))
	require.Equal(t, md, keepSections(md, ""), "no old file")
}

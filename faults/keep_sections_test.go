package faults

import "testing"

// TestKeepSections: a rewrite of RESULTS.md keeps the sections the run
// did not generate, after the generated ones, and replaces those it did.
func TestKeepSections(t *testing.T) {
	old := "# Results\n\nold totals\n\n## Held keys\n\nhand-written\n\n## PostgreSQL failover\n\nold failover\n\n## Steps\n\nsteps text\n"
	md := "# Results\n\nnew totals\n\n## PostgreSQL failover\n\nnew failover\n"
	want := "# Results\n\nnew totals\n\n## PostgreSQL failover\n\nnew failover\n\n## Held keys\n\nhand-written\n\n## Steps\n\nsteps text\n"
	if got := keepSections(md, old); got != want {
		t.Errorf("keepSections:\n%s\nwant:\n%s", got, want)
	}
	if got := keepSections(md, ""); got != md {
		t.Errorf("keepSections with no old file:\n%s\nwant:\n%s", got, md)
	}
}

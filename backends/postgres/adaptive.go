package postgres

import "github.com/stagedoor/once/backends/internal/claimmix"

// recordClaim records in m the answer of a claim's first statements: the
// Store sends its insert first (insert_claim.sql, then read_claim.sql only
// when the key had a row) while m says most keys are new, and its read
// first (read_claim.sql, then insert_claim.sql only when it saw no row)
// otherwise (claimmix.Even). A row that is not visible counts as met.
func recordClaim(m *claimmix.Mix, r fastRow) {
	if r.found && r.state == 0 {
		m.Created()
	} else {
		m.Found()
	}
}

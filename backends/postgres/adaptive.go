package postgres

import "github.com/stagedoor/once/backends/internal/claimmix"

// recordClaim records in m the answer of a claim's first statement: the
// Store sends the insert first (insert_claim.sql, then read_claim.sql only
// when the key had a row) while m says nearly every key is new, and the
// one-statement claim (claim.sql) otherwise (claimmix.Mix). A row that is
// not visible counts as met.
func recordClaim(m *claimmix.Mix, r fastRow) {
	if r.found && r.state == 0 {
		m.Created()
	} else {
		m.Found()
	}
}

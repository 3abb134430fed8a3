package mysqlstore

import (
	"errors"
	"strings"
	"testing"
)

// MySQL's routine names ignore case on every lower_case_table_names
// setting, its table names do not at 0 (Linux's default): the tables
// "once_x" and "ONCE_X" would be two tables whose <table>_call_v1 is one
// procedure, so the second Migrate would point it at its own table, and
// the first table's Store would then claim in one CALL (OneRoundTripClaims,
// InTx, DoTx) and resolve in the other table. New refuses a table name with
// an upper-case letter, so no two names the Store accepts share a
// procedure.
func TestNewRefusesUpperCaseTableNames(t *testing.T) {
	for _, table := range []string{"ONCE_RECORDS", "Once_records", "once_Records", "oncE", "X", "a_1B"} {
		_, err := New(nil, &Config{Table: table})
		var ie *IdentifierError
		if !errors.As(err, &ie) || ie.Field != "Table" || ie.Name != table || !strings.Contains(ie.Reason, "upper-case") {
			t.Fatalf("New with table %q: %v, want an *IdentifierError about upper case", table, err)
		}
	}
	for _, table := range []string{"once_records", "orders", "a_1b", "_x9"} {
		if _, err := New(nil, &Config{Table: table}); err != nil {
			t.Fatalf("New with table %q: %v", table, err)
		}
	}
}

package mysqlstore

import (
	"fmt"

	"github.com/stagedoor/once/internal/sqlident"
)

// Identifier limits: MySQL names are at most 64 characters, and the table
// name leaves room for the suffixes of the objects Migrate derives from it,
// the longest being migration 001's index <table>_expires_at_idx (which
// 002 replaces by <table>_state_idx).
const (
	maxIdentifierLen = 64
	maxTableLen      = maxIdentifierLen - len("_expires_at_idx")
)

// IdentifierError reports a Config table name that New refuses. Names are
// restricted to plain identifiers (ASCII letters, digits and underscores,
// not starting with a digit) so that they mean the same quoted or not and
// on every lower_case_table_names setting; they are still always quoted.
type IdentifierError struct {
	// Field is "Table".
	Field string
	// Name is the refused name.
	Name string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *IdentifierError) Error() string {
	return fmt.Sprintf("once/mysql: invalid %s name %q: %s", e.Field, e.Name, e.Reason)
}

func validateIdentifier(field, name string, maxLen int) error {
	if reason := sqlident.Check(name, maxLen); reason != "" {
		return &IdentifierError{Field: field, Name: name, Reason: reason}
	}
	return nil
}

// quote returns name, already validated, between backticks.
func quote(name string) string { return "`" + name + "`" }

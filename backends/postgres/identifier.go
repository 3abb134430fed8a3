package postgres

import (
	"fmt"

	"github.com/stagedoor/once/internal/sqlident"
)

// Identifier limits: PostgreSQL truncates names at 63 bytes, and the table
// name leaves room for the suffixes of the objects Migrate derives from it.
const (
	maxIdentifierLen = 63
	maxTableLen      = maxIdentifierLen - len("_migrations")
)

// IdentifierError reports a Config schema or table name that New and
// Migrate refuse. Names are restricted to plain identifiers (ASCII
// letters, digits and underscores, not starting with a digit) so that they
// mean the same quoted or not; they are still always quoted in SQL.
type IdentifierError struct {
	// Field is "Schema" or "Table".
	Field string
	// Name is the refused name.
	Name string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *IdentifierError) Error() string {
	return fmt.Sprintf("once/postgres: invalid %s name %q: %s", e.Field, e.Name, e.Reason)
}

func validateIdentifier(field, name string, maxLen int) error {
	if reason := sqlident.Check(name, maxLen); reason != "" {
		return &IdentifierError{Field: field, Name: name, Reason: reason}
	}
	return nil
}

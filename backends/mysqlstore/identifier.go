package mysqlstore

import (
	"fmt"
	"strings"

	"github.com/stagedoor/once/internal/sqlident"
)

// Identifier limits: MySQL names are at most 64 characters, and the table
// name leaves room for the suffixes of the objects Migrate derives from it,
// the longest being <table>_migrations.
const (
	maxIdentifierLen = 64
	maxTableLen      = maxIdentifierLen - len("_migrations")
)

// IdentifierError reports a Config table name that New refuses. Names are
// restricted to plain lower-case identifiers (ASCII lower-case letters,
// digits and underscores, not starting with a digit) so that they mean the
// same quoted or not and on every lower_case_table_names setting; they are
// still always quoted.
//
// Upper-case letters are refused because MySQL's routine names are
// case-insensitive on every lower_case_table_names setting while its table
// names are case-sensitive at 0 (Linux's default): the tables "Orders" and
// "orders" are two tables there, but their procedures <Table>_call_v1 are
// one, and the second Migrate would point it at its own table, so the
// first table's Store would claim in one CALL and resolve in the other
// table.
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

// upperCaseReason is why a name with an upper-case letter is refused.
const upperCaseReason = "upper-case letters are not allowed: MySQL's procedure names ignore case, " +
	"so a table named differently only in case would share this table's procedures; " +
	"use a lower-case name (see the README's \"Table names\" to rename a table created with capitals)"

func validateIdentifier(field, name string, maxLen int) error {
	reason := sqlident.Check(name, maxLen)
	if reason == "" && strings.ToLower(name) != name {
		reason = upperCaseReason
	}
	if reason != "" {
		return &IdentifierError{Field: field, Name: name, Reason: reason}
	}
	return nil
}

// quote returns name, already validated, between backticks.
func quote(name string) string { return "`" + name + "`" }

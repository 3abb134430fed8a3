// Package sqlident checks the table and schema names the SQL backends accept:
// plain identifiers (ASCII letters, digits and underscores, not starting
// with a digit), which mean the same quoted or not on every server.
package sqlident

import "fmt"

// Check returns why name is not a plain identifier of at most maxLen bytes,
// or "" when it is one.
func Check(name string, maxLen int) (reason string) {
	if name == "" {
		return "empty"
	}
	if len(name) > maxLen {
		return fmt.Sprintf("longer than %d bytes", maxLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9':
			if i == 0 {
				return "starts with a digit"
			}
		default:
			return "only ASCII letters, digits and underscores are allowed"
		}
	}
	return ""
}

package oncehttp

import (
	"testing"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/internal/testservers"
)

// TestScenarioOnEveryStore runs the seed's scenario on the PostgreSQL and
// Redis stores: the middleware works with every backend unchanged.
func TestScenarioOnEveryStore(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		if name == "memory" {
			continue // TestScenario covers it
		}
		t.Run(name, func(t *testing.T) {
			runScenario(t, once.New(newStore(t)))
		})
	}
}

package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends/backendtest"
)

// A scope, key, owner token or fingerprint no call may send is refused
// with an *Error ("invalid input: <field> ...") before any statement: on
// a closed pool too, whose every statement fails otherwise.
func TestRefusesInputNoCallMaySend(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	pool.Close()
	ctx := context.Background()
	check := func(op, field, msg string, err error, applied bool) {
		var e *Error
		require.ErrorAs(t, err, &e, msg)
		assert.Equal(t, op, e.Op, msg)
		assert.Empty(t, e.Code, msg)
		assert.Contains(t, err.Error(), ": invalid input: "+field+" ", msg)
		assert.False(t, applied, msg)
	}
	backendtest.EachBadNameCall(ctx, s, "s", "k", func(c backendtest.BadNameCall) {
		check(c.Op, c.Field, fmt.Sprintf("%s %s %q", c.Op, c.Field, c.Name), c.Err, c.Applied)
	})
	backendtest.EachBadOwnerOrFingerprintCall(ctx, s, "s", "k", func(c backendtest.BadParamCall) {
		check(c.Op, c.Field, fmt.Sprintf("%s %s %s", c.Op, c.Value, c.Field), c.Err, c.Applied)
	})
	backendtest.EachBadHeldCall(ctx, s, "s", "k", "o", func(c backendtest.BadParamCall) {
		check(c.Op, c.Field, fmt.Sprintf("%s %s %s", c.Op, c.Value, c.Field), c.Err, c.Applied)
	})
}

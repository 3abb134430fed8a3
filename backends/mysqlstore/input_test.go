package mysqlstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends/backendtest"
)

// A scope, key, owner token or fingerprint no call may send is refused
// with an *InputError before anything is sent: on a closed database too,
// whose every statement fails otherwise.
func TestRefusesInputNoCallMaySend(t *testing.T) {
	db := newDB(t, nil)
	s := newStore(t, db, Config{})
	require.NoError(t, db.Close())
	ctx := context.Background()
	check := func(op, field, msg string, err error, applied bool) {
		var ie *InputError
		require.ErrorAs(t, err, &ie, msg)
		assert.Equal(t, op, ie.Op, msg)
		assert.True(t, strings.EqualFold(field, ie.Field), msg)
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

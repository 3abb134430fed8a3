package sqlitestore

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// A scope or key no record can have is refused with an *Error before any
// statement: on a closed Store too, whose every statement fails with
// backends.ErrClosed.
func TestRefusesNamesNoRecordCanHave(t *testing.T) {
	ctx := context.Background()
	s, err := newMigrated(ctx, tempDB(t), nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	backendtest.EachBadNameCall(ctx, s, "s", "k", func(c backendtest.BadNameCall) {
		msg := fmt.Sprintf("%s %s %q", c.Op, c.Field, c.Name)
		var e *Error
		require.ErrorAs(t, c.Err, &e, msg)
		assert.Equal(t, c.Op, e.Op, msg)
		assert.NotErrorIs(t, c.Err, backends.ErrClosed, "refused before any statement")
		assert.Contains(t, c.Err.Error(), "invalid input: "+c.Field+" ", msg)
		if c.Name != "" {
			assert.NotContains(t, c.Err.Error(), c.Name, "the error does not contain the value")
		}
	})
}

// An owner token or a fingerprint no call may send is refused with an
// *Error before any statement, as a bad name is.
func TestRefusesOwnersAndFingerprintsOutOfBounds(t *testing.T) {
	ctx := context.Background()
	s, err := newMigrated(ctx, tempDB(t), nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	backendtest.EachBadOwnerOrFingerprintCall(ctx, s, "s", "k", func(c backendtest.BadParamCall) {
		msg := fmt.Sprintf("%s %s %s", c.Op, c.Value, c.Field)
		var e *Error
		require.ErrorAs(t, c.Err, &e, msg)
		assert.Equal(t, c.Op, e.Op, msg)
		assert.NotErrorIs(t, c.Err, backends.ErrClosed, "refused before any statement")
		assert.Contains(t, c.Err.Error(), "invalid input: "+c.Field+" ", msg)
	})
}

// A held code or message backends.HeldProblem refuses is refused with an
// *Error before any statement, as a bad name is.
func TestRefusesHeldCodesAndMessagesOutOfBounds(t *testing.T) {
	ctx := context.Background()
	s, err := newMigrated(ctx, tempDB(t), nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	backendtest.EachBadHeldCall(ctx, s, "s", "k", "o", func(c backendtest.BadParamCall) {
		msg := fmt.Sprintf("%s %s %s", c.Op, c.Value, c.Field)
		var e *Error
		require.ErrorAs(t, c.Err, &e, msg)
		assert.Equal(t, c.Op, e.Op, msg)
		assert.NotErrorIs(t, c.Err, backends.ErrClosed, "refused before any statement")
		assert.Contains(t, c.Err.Error(), "invalid input: "+c.Field+" ", msg)
	})
}

package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/redisstore"
)

// A scope or key no record can have is refused with ErrInvalid before
// anything is sent: on a closed client too, whose every command fails.
func TestRefusesNamesNoRecordCanHave(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: singleAddr()})
	s := newStore(t, client, nil)
	require.NoError(t, client.Close())
	backendtest.EachBadNameCall(context.Background(), s, "s", "k", func(c backendtest.BadNameCall) {
		msg := fmt.Sprintf("%s %s %q", c.Op, c.Field, c.Name)
		require.ErrorIs(t, c.Err, redisstore.ErrInvalid, msg)
		var e *redisstore.Error
		require.ErrorAs(t, c.Err, &e, msg)
		assert.Equal(t, c.Op, e.Op, msg)
		assert.True(t, strings.HasPrefix(e.Detail, c.Field+" "), "%q names the field", e.Detail)
		if c.Name != "" {
			assert.NotContains(t, c.Err.Error(), c.Name, "the error does not contain the value")
		}
	})
}

// An owner token or a fingerprint no call may send is refused with
// ErrInvalid before anything is sent, as a bad name is.
func TestRefusesOwnersAndFingerprintsOutOfBounds(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: singleAddr()})
	s := newStore(t, client, nil)
	require.NoError(t, client.Close())
	backendtest.EachBadOwnerOrFingerprintCall(context.Background(), s, "s", "k", func(c backendtest.BadParamCall) {
		msg := fmt.Sprintf("%s %s %s", c.Op, c.Value, c.Field)
		require.ErrorIs(t, c.Err, redisstore.ErrInvalid, msg)
		var e *redisstore.Error
		require.ErrorAs(t, c.Err, &e, msg)
		assert.Equal(t, c.Op, e.Op, msg)
		assert.True(t, strings.HasPrefix(e.Detail, c.Field+" "), "%q names the field", e.Detail)
	})
}

// A held code or message backends.HeldProblem refuses is refused with
// ErrInvalid before anything is sent, as a bad name is.
func TestRefusesHeldCodesAndMessagesOutOfBounds(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: singleAddr()})
	s := newStore(t, client, nil)
	require.NoError(t, client.Close())
	backendtest.EachBadHeldCall(context.Background(), s, "s", "k", "o", func(c backendtest.BadParamCall) {
		msg := fmt.Sprintf("%s %s %s", c.Op, c.Value, c.Field)
		require.ErrorIs(t, c.Err, redisstore.ErrInvalid, msg)
		var e *redisstore.Error
		require.ErrorAs(t, c.Err, &e, msg)
		assert.Equal(t, c.Op, e.Op, msg)
		assert.True(t, strings.HasPrefix(e.Detail, c.Field+" "), "%q names the field", e.Detail)
	})
}

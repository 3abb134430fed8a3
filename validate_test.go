package once_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

func TestBadInputGetsTypedErrorsBeforeTheStore(t *testing.T) {
	cases := []struct {
		name, scope, key string
		fp               once.Fingerprint
		field, reason    string
	}{
		{"empty scope", "", "k", nil, "scope", "empty"},
		{"empty key", "s", "", nil, "key", "empty"},
		{"256-byte key", "s", strings.Repeat("k", 256), nil, "key", "longer than 255 bytes"},
		{"256-byte scope", strings.Repeat("s", 256), "k", nil, "scope", "longer than 255 bytes"},
		{"invalid UTF-8 key", "s", "k\xff", nil, "key", "not valid UTF-8"},
		{"invalid UTF-8 scope", "\xc3\x28", "k", nil, "scope", "not valid UTF-8"},
		{"NUL in key", "s", "k\x00", nil, "key", "contains a control character"},
		{"newline in key", "s", "k\nX-Injected: 1", nil, "key", "contains a control character"},
		{"tab in scope", "s\t", "k", nil, "scope", "contains a control character"},
		{"DEL in key", "s", "k\x7f", nil, "key", "contains a control character"},
		{"C1 control in key", "s", "k\u0085", nil, "key", "contains a control character"},
		{"65-byte fingerprint", "s", "k", make(once.Fingerprint, 65), "fingerprint", "longer than 64 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := newFaultStore(memory.New(nil))
			ran := false
			_, err := once.Do(context.Background(), once.New(store).Scope(c.scope), c.key, c.fp,
				func(context.Context) (int, error) { ran = true; return 1, nil })
			var invalid *once.InvalidInputError
			require.ErrorAs(t, err, &invalid)
			assert.ErrorAs(t, err, new(*once.InvalidInputError))
			assert.Equal(t, c.field, invalid.Field)
			assert.Equal(t, c.reason, invalid.Reason)
			assert.False(t, ran)
			assert.Zero(t, store.Calls("claim"), "validation happens before any store call")
			if c.key != "" {
				assert.NotContains(t, err.Error(), c.key, "the error never echoes the input")
			}
		})
	}
}

func TestLimitsAreInclusive(t *testing.T) {
	scope := once.New(nil).Scope(strings.Repeat("s", backends.MaxScopeLen))
	v, err := once.Do(context.Background(), scope, strings.Repeat("é", 127)+"k", make(once.Fingerprint, 64),
		func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	assert.Equal(t, 1, v)
}

func TestNilContextAndNilKeeperAreErrorsNotPanics(t *testing.T) {
	fn := func(context.Context) (int, error) { return 1, nil }
	var invalid *once.InvalidInputError
	//lint:ignore SA1012 a nil context is the input under test
	_, err := once.Do(nil, once.New(nil).Scope("s"), "k", nil, fn)
	require.ErrorAs(t, err, &invalid)
	assert.Equal(t, "ctx", invalid.Field)

	var k *once.Keeper
	_, err = once.Do(context.Background(), k.Scope("s"), "k", nil, fn)
	require.ErrorAs(t, err, &invalid)
	assert.Equal(t, "scope", invalid.Field)
	require.ErrorAs(t, once.Resolve(context.Background(), k.Scope("s"), "k", nil, 1, nil), &invalid)
}

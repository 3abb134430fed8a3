package backends_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestListParamsValidate(t *testing.T) {
	for _, st := range []backends.State{0, backends.StatePending, backends.StateHeld, backends.StateCompleted} {
		require.NoError(t, backends.ListParams{State: st}.Validate(), "State %d", st)
	}
	for _, st := range []backends.State{4, 10, 11, 13, 255} {
		err := backends.ListParams{State: st}.Validate()
		var le *backends.ListParamsError
		require.ErrorAs(t, err, &le, "State %d", st)
		require.Equal(t, "State", le.Field)
		require.ErrorIs(t, err, backends.ErrInvalidListParams)
		require.Equal(t, "once: list: invalid State: not pending, held or completed (nor zero, for pending and held)", err.Error())
	}
	for _, c := range []struct {
		p     backends.ListParams
		field string
	}{
		{backends.ListParams{Scope: "a\x00b"}, "Scope"},
		{backends.ListParams{Scope: "\xff"}, "Scope"},
		{backends.ListParams{Scope: "z\xc5"}, "Scope"},
		{backends.ListParams{Scope: "a\tb"}, "Scope"},
		{backends.ListParams{Scope: strings.Repeat("s", backends.MaxScopeLen+1)}, "Scope"},
		{backends.ListParams{KeyPrefix: "\x00"}, "KeyPrefix"},
		{backends.ListParams{KeyPrefix: "k\xff"}, "KeyPrefix"},
		{backends.ListParams{KeyPrefix: "z\xc5"}, "KeyPrefix"},
		{backends.ListParams{KeyPrefix: "\u0085"}, "KeyPrefix"},
		{backends.ListParams{KeyPrefix: strings.Repeat("k", backends.MaxKeyLen+1)}, "KeyPrefix"},
		{backends.ListParams{State: 9, Scope: "\x00"}, "State"},
		{backends.ListParams{Scope: "\x00", KeyPrefix: "\x00"}, "Scope"},
	} {
		err := c.p.Validate()
		var le *backends.ListParamsError
		require.ErrorAs(t, err, &le, "%+v", c.p)
		require.Equal(t, c.field, le.Field, "%+v", c.p)
		require.ErrorIs(t, err, backends.ErrInvalidListParams)
		require.NotContains(t, err.Error(), c.p.Scope+c.p.KeyPrefix, "the value is not in the error")
	}
	for _, ok := range []backends.ListParams{
		{Scope: strings.Repeat("s", backends.MaxScopeLen), KeyPrefix: strings.Repeat("k", backends.MaxKeyLen)},
		{Scope: "złoty ₿", KeyPrefix: "zł"},
		{KeyPrefix: "with space"},
	} {
		require.NoError(t, ok.Validate(), "%+v", ok)
	}
}

func TestListParamsPageLimit(t *testing.T) {
	for limit, want := range map[int]int{
		-1 << 62: backends.DefaultListLimit, -1: backends.DefaultListLimit, 0: backends.DefaultListLimit,
		1: 1, 250: 250, backends.MaxListLimit: backends.MaxListLimit,
		backends.MaxListLimit + 1: backends.MaxListLimit, 1 << 62: backends.MaxListLimit,
	} {
		require.Equal(t, want, backends.ListParams{Limit: limit}.PageLimit(), "Limit %d", limit)
	}
}

package backends_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestListParamsValidate(t *testing.T) {
	for _, st := range []backends.State{0, backends.StatePending, backends.StateHeld} {
		require.NoError(t, backends.ListParams{State: st}.Validate(), "State %d", st)
	}
	for _, st := range []backends.State{backends.StateCompleted, 4, 10, 11, 13, 255} {
		err := backends.ListParams{State: st}.Validate()
		var le *backends.ListParamsError
		require.ErrorAs(t, err, &le, "State %d", st)
		require.Equal(t, "State", le.Field)
		require.ErrorIs(t, err, backends.ErrInvalidListParams)
		require.Equal(t, "once: list: invalid State: neither pending nor held (nor zero, for both)", err.Error())
	}
}

func TestCursorBinding(t *testing.T) {
	shape := regexp.MustCompile(`^[0-9a-f]{17}$`)
	base := backends.ListParams{State: backends.StateHeld, Scope: "ab", KeyPrefix: "c"}
	b := base.CursorBinding()
	require.Regexp(t, shape, b)
	same := base
	same.OlderThan, same.Limit, same.Cursor = time.Hour, 7, "x"
	require.Equal(t, b, same.CursorBinding(), "OlderThan, Limit and Cursor are not bound")
	require.NoError(t, same.CheckCursorBinding(b))

	for _, other := range []backends.ListParams{
		{State: 0, Scope: "ab", KeyPrefix: "c"},
		{State: backends.StatePending, Scope: "ab", KeyPrefix: "c"},
		{State: backends.StateHeld, Scope: "a", KeyPrefix: "bc"},
		{State: backends.StateHeld, Scope: "abc", KeyPrefix: ""},
		{State: backends.StateHeld, Scope: "", KeyPrefix: "abc"},
		{State: backends.StateHeld, Scope: "ab", KeyPrefix: ""},
		{State: backends.StateHeld, Scope: "ab", KeyPrefix: "d"},
	} {
		ob := other.CursorBinding()
		require.Regexp(t, shape, ob)
		require.NotEqual(t, b, ob, "%+v", other)
		err := other.CheckCursorBinding(b)
		var le *backends.ListParamsError
		require.ErrorAs(t, err, &le, "%+v", other)
		require.Equal(t, "Cursor", le.Field)
		require.ErrorIs(t, err, backends.ErrInvalidListParams)
		if other.State != base.State {
			require.Contains(t, le.Reason, "State")
		} else {
			require.Contains(t, le.Reason, "Scope or KeyPrefix")
		}
	}
	for _, bad := range []string{"", "3", b[:16], b + "0", "x" + b[1:]} {
		err := base.CheckCursorBinding(bad)
		var le *backends.ListParamsError
		require.ErrorAs(t, err, &le, "%q", bad)
		require.Equal(t, "Cursor", le.Field)
	}
	require.Equal(t, "once: list: invalid Cursor: not a cursor this store returned", backends.BadCursor().Error())
}

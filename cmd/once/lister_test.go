package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// onlyStore is a store that implements backends.Store and nothing more
// (the methods of backends.Lister are not promoted through the interface
// field).
type onlyStore struct{ backends.Store }

// TestNotListerError: once list and once stats on a store without
// backends.Lister fail with a *notListerError, exit status
// 1 (not a usage error: the command line was right), naming the store.
func TestNotListerError(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"list", "count"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			c := &conn{store: onlyStore{memory.New(nil)}}
			l, err := c.lister(op)
			require.Nil(t, l)
			var nl *notListerError
			require.ErrorAs(t, err, &nl)
			require.Equal(t, op, nl.Op)
			require.Equal(t, "main.onlyStore", nl.Store)
			require.False(t, errors.As(err, new(*usageError)), "not a usage error")

			var stderr bytes.Buffer
			require.Equal(t, exitFailure, report(&stderr, err))
			require.Equal(t, "once: this store cannot "+op+" records (main.onlyStore does not implement backends.Lister)\n", stderr.String())
		})
	}
	t.Run("Lister", func(t *testing.T) {
		t.Parallel()
		s := memory.New(nil)
		l, err := (&conn{store: s}).lister("list")
		require.NoError(t, err)
		require.Same(t, s, l, "a store that implements backends.Lister is returned as it is")
	})
}

package once_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

// TestSeveralMarksOnOneError: an error that carries several class marks
// (joined, or wrapped) gets the class WithClassifier's doc states: a mark
// speaks for the error it wraps, and among the outermost marks the most
// cautious wins, whatever their order (Hold, then Retry, then Final). The
// first mark found used to win, so errors.Join(Final(a), Hold(b)) stored a
// final answer for an outcome partly unknown, and no reconciler would
// ever settle the held part; then Final beat Retry, and a mark that only
// an As method reaches lost to any other. The classifier is asked about
// an error with no mark only.
func TestSeveralMarksOnOneError(t *testing.T) {
	a, b := errors.New("card declined"), errors.New("capture timed out")
	cases := []struct {
		name string
		err  error
		want once.Class
	}{
		{"join final then hold", errors.Join(once.Final(a), once.Hold(b)), once.ClassHold},
		{"join hold then final", errors.Join(once.Hold(b), once.Final(a)), once.ClassHold},
		{"wrapped join of final and hold", fmt.Errorf("charge: %w", errors.Join(once.Final(a), once.Hold(b))), once.ClassHold},
		{"join retry then hold", errors.Join(once.Retry(a), once.Hold(b)), once.ClassHold},
		{"join retry then final", errors.Join(once.Retry(a), once.Final(b)), once.ClassRetry},
		{"join final then retry", errors.Join(once.Final(a), once.Retry(b)), once.ClassRetry},
		{"final beside a deeper hold", errors.Join(once.Final(a), fmt.Errorf("capture: %w", once.Hold(b))), once.ClassHold},
		{"a mark found by As alone", asOnly{once.Hold(b)}, once.ClassHold},
		{"final beside a hold found by As", errors.Join(once.Final(a), asOnly{once.Hold(b)}), once.ClassHold},
		{"join of a mark and an unmarked error", errors.Join(a, once.Final(b)), once.ClassFinal},
		{"retry around hold", once.Retry(fmt.Errorf("step: %w", once.Hold(b))), once.ClassRetry},
		{"final around a join with hold", once.Final(errors.Join(a, once.Hold(b))), once.ClassFinal},
		{"hold around final", once.Hold(once.Final(a)), once.ClassHold},
		{"wrapped final", fmt.Errorf("charge: %w", once.Final(a)), once.ClassFinal},
		{"no mark: the classifier", errors.Join(a, b), once.ClassFinal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			asked := 0
			scope := once.New(nil, once.WithClassifier(func(error) once.Class { asked++; return once.ClassFinal })).Scope("s")
			runs := 0
			fn := func(context.Context) (int, error) { runs++; return 0, c.err }
			_, first := once.Do(ctx, scope, "k", nil, fn)
			require.Error(t, first)
			_, again := once.Do(ctx, scope, "k", nil, fn)
			switch c.want {
			case once.ClassHold:
				var inProgress *once.InProgressError
				require.ErrorAs(t, again, &inProgress, "held: a retry waits")
				require.True(t, inProgress.Held)
				require.Equal(t, 1, runs)
			case once.ClassFinal:
				require.Equal(t, first, again, "final: a retry replays it")
				require.Equal(t, 1, runs)
			default:
				require.Equal(t, 2, runs, "retryable: a retry runs fn again")
			}
			wantAsked := 0
			if c.name == "no mark: the classifier" {
				wantAsked = 1
			}
			require.Equal(t, wantAsked, asked, "classifier calls")
		})
	}
}

// asOnly hides its error from Unwrap, and finds it with As (an error type
// that delegates As to an error it keeps private).
type asOnly struct{ err error }

func (e asOnly) Error() string      { return e.err.Error() }
func (e asOnly) As(target any) bool { return errors.As(e.err, target) }

package once

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lostFunc is a fnCanceler of the renewer's tests.
type lostFunc func(error)

func (f lostFunc) cancel(cause error) { f(cause) }

// fnContext, made on its first use, answers as the
// context.WithCancelCause of the call's context made at the start would
// (the reference): for every order of the claim's loss, Do's return and
// the call's cancellation, and a first look by fn before, between or
// after them, its Done, Err, Cause, values and deadline are the
// reference's.
func TestFnContextIsACancelCause(t *testing.T) {
	gaveUp := errors.New("the caller gave up")
	orders := [][]string{
		{"lost", "return", "call"}, {"lost", "call", "return"}, {"return", "lost", "call"},
		{"return", "call", "lost"}, {"call", "lost", "return"}, {"call", "return", "lost"},
		{"return"}, {"lost"}, {"call"}, {},
	}
	for _, order := range orders {
		for look := 0; look <= len(order); look++ {
			ops := append(append(append([]string{}, order[:look]...), "look"), order[look:]...)
			t.Run(strings.Join(ops, ","), func(t *testing.T) {
				deadline := time.Now().Add(time.Hour)
				base, cancelBase := context.WithDeadline(context.WithValue(context.Background(), ctxKey{}, "v"), deadline)
				defer cancelBase()
				parent, cancelCall := context.WithCancelCause(base)
				defer cancelCall(nil)
				ref, stop := context.WithCancelCause(parent)
				f := &fnContext{parent: parent, claim: &claim{}}
				for _, op := range ops {
					switch op {
					case "lost":
						f.end(ErrLeaseLost)
						stop(ErrLeaseLost)
					case "return":
						f.end(nil)
						stop(nil)
					case "call":
						cancelCall(gaveUp)
					case "look":
						require.Equal(t, ref.Err(), f.Err())
					}
				}
				require.Equal(t, ref.Err(), f.Err())
				require.Equal(t, context.Cause(ref), context.Cause(f))
				select {
				case <-ref.Done():
					<-f.Done()
				default:
					select {
					case <-f.Done():
						t.Fatal("done where the reference is not")
					default:
					}
				}
				require.Equal(t, "v", f.Value(ctxKey{}))
				require.Same(t, f.claim, f.Value(claimKey{}))
				d, ok := f.Deadline()
				require.True(t, ok)
				require.Equal(t, deadline, d)
				child, cancelChild := context.WithCancel(f)
				defer cancelChild()
				stop(nil)
				f.end(nil)
				<-child.Done()
				require.Equal(t, context.Cause(ref), context.Cause(child))
			})
		}
	}
}

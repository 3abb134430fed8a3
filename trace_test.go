package once_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

type spanKey struct{}

// spanTracer records the start and end of every call, and puts a "span"
// into the context as an OpenTelemetry tracer would.
type spanTracer struct {
	name   string
	log    *[]string
	mu     sync.Mutex
	starts []once.Event
	ends   []once.Event
}

func (s *spanTracer) TraceDoStart(ctx context.Context, d once.Event) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.log = append(*s.log, s.name+" start "+d.Key)
	s.starts = append(s.starts, d)
	return context.WithValue(ctx, spanKey{}, s.name)
}

func (s *spanTracer) TraceDoEnd(ctx context.Context, d once.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.log = append(*s.log, s.name+" end "+d.Key+" in "+ctx.Value(spanKey{}).(string))
	s.ends = append(s.ends, d)
}

func TestTracerWrapsEveryCall(t *testing.T) {
	var log []string
	tr := &spanTracer{name: "a", log: &log}
	var observed []string
	scope := once.New(nil, once.WithTracer(tr), once.WithObserver(func(ctx context.Context, e once.Event) {
		observed = append(observed, e.Kind.String()+" in "+ctx.Value(spanKey{}).(string))
	})).Scope("s")
	ctx := context.Background()
	var fnSaw any
	fn := func(ctx context.Context) (int, error) { fnSaw = ctx.Value(spanKey{}); return 1, nil }

	_, err := once.Do(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	_, err = once.Do(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	_, err = once.Do(ctx, scope, "", nil, fn)
	require.ErrorAs(t, err, new(*once.InvalidInputError))
	assert.Panics(t, func() {
		_, _ = once.Do(ctx, scope, "p", nil, func(context.Context) (int, error) { panic("boom") })
	})

	assert.Equal(t, "a", fnSaw, "fn runs under the tracer's context")
	assert.Equal(t, []string{"claimed in a", "executed in a", "recorded in a", "replayed in a", "claimed in a", "released in a"}, observed)
	require.Len(t, tr.starts, 4)
	assert.Equal(t, once.Event{Kind: once.EventDoStart, Scope: "s", Key: "k"}, tr.starts[0])
	assert.Equal(t, once.Event{Kind: once.EventDoStart, Scope: "s", Key: "p"}, tr.starts[3])
	require.Len(t, tr.ends, 4)
	assert.Equal(t, once.Event{Kind: once.EventDoEnd, Scope: "s", Key: "k", Status: once.Recorded}, tr.ends[0])
	assert.Equal(t, once.Event{Kind: once.EventDoEnd, Scope: "s", Key: "k", Status: once.Replayed}, tr.ends[1])
	assert.ErrorAs(t, tr.ends[2].Err, new(*once.InvalidInputError))
	assert.True(t, tr.ends[3].Panicked)
	assert.False(t, tr.ends[0].Panicked)
}

func TestTracersNest(t *testing.T) {
	var log []string
	scope := once.New(nil, once.WithTracer(&spanTracer{name: "outer", log: &log}), once.WithTracer(nil)).
		Scope("s").With(once.WithTracer(&spanTracer{name: "inner", log: &log}))
	_, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 0, errors.New("x") })
	require.Error(t, err)
	assert.Equal(t, []string{"outer start k", "inner start k", "inner end k in inner", "outer end k in inner"}, log)
}

// An fn that recovers its own panic and returns it as (or wrapped around)
// a *PanicError, whatever its class, is traced as panicked, as a panic is
// that leaves Do; its class decides the key's fate as for any error. An
// error without one, a replay, and a nil fn are not.
func TestTracerSeesAPanicFnRecovered(t *testing.T) {
	tr := &spanTracer{name: "a", log: new([]string)}
	var executed []once.Event
	scope := once.New(nil, once.WithTracer(tr), once.WithObserver(func(_ context.Context, e once.Event) {
		if e.Kind == once.EventExecuted {
			executed = append(executed, e)
		}
	})).Scope("s")
	ctx := context.Background()
	recovered := func(wrap func(error) error) func(context.Context) (int, error) {
		return func(context.Context) (v int, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = wrap(&once.PanicError{Value: p})
				}
			}()
			panic("boom")
		}
	}
	_, err := once.Do(ctx, scope, "held", nil, recovered(once.Hold))
	require.Error(t, err)
	_, err = once.Do(ctx, scope, "retried", nil, recovered(func(err error) error { return fmt.Errorf("render: %w", err) }))
	require.Error(t, err)
	_, err = once.Do(ctx, scope, "final", nil, recovered(once.Final))
	require.Error(t, err)
	_, err = once.Do(ctx, scope, "final", nil, recovered(once.Final))
	require.Error(t, err, "the replay of the stored final error")
	_, err = once.Do(ctx, scope, "plain", nil, func(context.Context) (int, error) { return 0, errors.New("plain") })
	require.Error(t, err)
	_, err = once.Do[int](ctx, scope, "nil", nil, nil)
	require.ErrorAs(t, err, new(*once.InvalidInputError))

	require.Len(t, tr.ends, 6)
	var p *once.PanicError
	for i, want := range []bool{true, true, true, false, false, false} {
		assert.Equal(t, want, tr.ends[i].Panicked, "call %d (%s)", i, tr.ends[i].Key)
	}
	require.ErrorAs(t, tr.ends[0].Err, &p)
	assert.Equal(t, "boom", p.Value)
	assert.ErrorAs(t, tr.ends[1].Err, &p)
	_, err = once.Do(ctx, scope, "held", nil, func(context.Context) (int, error) { return 1, nil })
	assert.ErrorIs(t, err, once.ErrInProgress, "held, as its class says")
	_, err = once.Do(ctx, scope, "retried", nil, func(context.Context) (int, error) { return 1, nil })
	assert.NoError(t, err, "released, as its class says")

	require.Len(t, executed, 5) // the four that ran fn, and the retried key again
	for _, e := range executed[:3] {
		assert.ErrorAs(t, e.FnErr, &p, e.Key)
	}
	assert.Equal(t, []once.Class{once.ClassHold, once.ClassRetry, once.ClassFinal}, []once.Class{executed[0].Class, executed[1].Class, executed[2].Class})
}

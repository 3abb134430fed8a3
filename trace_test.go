package once_test

import (
	"context"
	"errors"
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
	name string
	log  *[]string
	mu   sync.Mutex
	ends []once.TraceDoEndData
}

func (s *spanTracer) TraceDoStart(ctx context.Context, d once.TraceDoStartData) context.Context {
	*s.log = append(*s.log, s.name+" start "+d.Key)
	return context.WithValue(ctx, spanKey{}, s.name)
}

func (s *spanTracer) TraceDoEnd(ctx context.Context, d once.TraceDoEndData) {
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
	require.ErrorIs(t, err, once.ErrInvalidInput)
	assert.Panics(t, func() {
		_, _ = once.Do(ctx, scope, "p", nil, func(context.Context) (int, error) { panic("boom") })
	})

	assert.Equal(t, "a", fnSaw, "fn runs under the tracer's context")
	assert.Equal(t, []string{"claimed in a", "executed in a", "recorded in a", "replayed in a", "claimed in a", "released in a"}, observed)
	require.Len(t, tr.ends, 4)
	assert.Equal(t, once.TraceDoEndData{Scope: "s", Key: "k", Recorded: true}, tr.ends[0])
	assert.Equal(t, once.TraceDoEndData{Scope: "s", Key: "k", Replayed: true, Recorded: true}, tr.ends[1])
	assert.ErrorIs(t, tr.ends[2].Err, once.ErrInvalidInput)
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

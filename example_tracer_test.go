package once_test

import (
	"context"
	"fmt"

	"github.com/stagedoor/once"
)

type traceSpanKey struct{}

// printTracer opens a "span" around each call: TraceDoStart returns the
// context that fn, the store and the observers then receive.
type printTracer struct{}

func (printTracer) TraceDoStart(ctx context.Context, e once.Event) context.Context {
	fmt.Println("start", e.Scope, e.Key)
	return context.WithValue(ctx, traceSpanKey{}, "span-"+e.Key)
}

func (printTracer) TraceDoEnd(ctx context.Context, e once.Event) {
	fmt.Println("end  ", ctx.Value(traceSpanKey{}), "err:", e.Err)
}

// A tracer wraps every call, including those that oncehttp's middleware
// makes, so a span started in TraceDoStart is the parent of everything the
// call does; onceotel is one for OpenTelemetry.
func ExampleWithTracer() {
	ctx := context.Background()
	k := once.New(nil, once.WithTracer(printTracer{}))
	charge := func(ctx context.Context) (string, error) {
		fmt.Println("fn runs in", ctx.Value(traceSpanKey{}))
		return "ch_1", nil
	}
	_, _ = once.Do(ctx, k.Scope("buyer-42"), "order-1", nil, charge)
	_, _ = once.Do(ctx, k.Scope("buyer-42"), "order-1", nil, charge)
	// Output:
	// start buyer-42 order-1
	// fn runs in span-order-1
	// end   span-order-1 err: <nil>
	// start buyer-42 order-1
	// end   span-order-1 err: <nil>
}

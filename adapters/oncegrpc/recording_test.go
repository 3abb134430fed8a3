package oncegrpc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncegrpc"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// lostLeaseStore applies no completion: the claim was taken over while
// the handler ran.
type lostLeaseStore struct{ backends.Store }

func (lostLeaseStore) Complete(context.Context, backends.CompleteParams) (bool, error) {
	return false, nil
}

// failingCompleteStore cannot record any outcome.
type failingCompleteStore struct{ backends.Store }

func (failingCompleteStore) Complete(context.Context, backends.CompleteParams) (bool, error) {
	return false, errors.New("disk full")
}

// errorLog collects what Config.OnError is told.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) onError(_ context.Context, _ string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// TestTheCallThatRanTheHandlerGetsItsAnswer: whatever becomes of
// recording the outcome, the caller whose call ran the handler gets the
// handler's response or status, and OnError is told why it is not stored.
func TestTheCallThatRanTheHandlerGetsItsAnswer(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]struct {
		store backends.Store
		want  error
	}{
		"LeaseLost":  {lostLeaseStore{memory.New(nil)}, once.ErrLeaseLost},
		"Unrecorded": {failingCompleteStore{memory.New(nil)}, once.ErrOutcomeUnrecorded},
	} {
		t.Run(name, func(t *testing.T) {
			var runs atomic.Int32
			var log errorLog
			declined := func(in *structpb.Struct) (*wrapperspb.StringValue, error) {
				if in.Fields["amount"].GetNumberValue() > 100 {
					return nil, status.Error(codes.FailedPrecondition, "insufficient funds")
				}
				return receipt(in)
			}
			cc := dial(t, startServer(t, c.store, charger(&runs, declined), oncegrpc.Config{OnError: log.onError}))
			reply, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
			require.NoError(t, err)
			require.Equal(t, "receipt for o1", reply.GetValue())
			_, _, err = call(ctx, cc, chargeMethod, "ann", "k2", order("o2", 500))
			require.Equal(t, codes.FailedPrecondition, status.Code(err))
			require.Equal(t, "insufficient funds", status.Convert(err).Message())
			require.Equal(t, int32(2), runs.Load())
			errs := log.all()
			require.Len(t, errs, 2)
			for _, e := range errs {
				require.ErrorIs(t, e, c.want)
			}
		})
	}
}

// TestLargeResponses: a response within MaxStoredResponse is stored in
// its wire form (no base64) and replayed; a larger one is returned to the
// call that ran the handler, and every retry learns that the call was
// processed (Internal, ReasonResponseUnavailable) without running it again.
func TestLargeResponses(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int32
	var log errorLog
	cc := dial(t, startServer(t, memory.New(nil), charger(&runs, func(in *structpb.Struct) (*wrapperspb.StringValue, error) {
		return wrapperspb.String(strings.Repeat("r", int(in.Fields["amount"].GetNumberValue()))), nil
	}), oncegrpc.Config{OnError: log.onError}))

	const fits = 1 << 20 // MaxStoredResponse's default, where base64-in-JSON stopped at 768 KiB
	first, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", fits))
	require.NoError(t, err)
	require.Len(t, first.GetValue(), fits)
	again, header, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", fits))
	require.NoError(t, err)
	require.True(t, proto.Equal(first, again))
	require.Equal(t, []string{"true"}, header.Get(oncegrpc.ReplayedHeader))
	require.Equal(t, int32(1), runs.Load())
	require.Empty(t, log.all())

	const tooLarge = fits + 100<<10
	first, _, err = call(ctx, cc, chargeMethod, "ann", "k2", order("o2", tooLarge))
	require.NoError(t, err, "the handler succeeded: its caller gets its response")
	require.Len(t, first.GetValue(), tooLarge)
	require.Len(t, log.all(), 1)
	require.ErrorAs(t, log.all()[0], new(*once.OutcomeTooLargeError))
	for range 2 {
		_, header, err = call(ctx, cc, chargeMethod, "ann", "k2", order("o2", tooLarge))
		st := status.Convert(err)
		require.Equal(t, codes.Internal, st.Code())
		requireReason(t, st, oncegrpc.ReasonResponseUnavailable)
		require.Equal(t, []string{"true"}, header.Get(oncegrpc.ReplayedHeader))
	}
	require.Equal(t, int32(2), runs.Load(), "the handler never runs again for the key")
}

func TestMaxStoredResponse(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int32
	cc := dial(t, startServer(t, memory.New(nil), charger(&runs, receipt), oncegrpc.Config{MaxStoredResponse: 2 << 20}))
	for range 2 {
		_, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order(strings.Repeat("o", 2<<20-100), 5))
		require.NoError(t, err)
	}
	require.Equal(t, int32(1), runs.Load())
	_, err := oncegrpc.ServerInterceptor(once.New(nil), oncegrpc.Config{Scope: userScope, MaxStoredResponse: -1})
	require.Error(t, err)
}

func requireReason(t *testing.T, st *status.Status, reason string) {
	t.Helper()
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			require.Equal(t, reason, info.GetReason())
			require.Equal(t, oncegrpc.ErrorDomain, info.GetDomain())
			return
		}
	}
	t.Fatalf("no ErrorInfo in %v", st.Details())
}

// protoCodec is a Keeper-wide codec for the service's own protobuf
// values, which cannot encode the interceptor's stored reply.
type protoCodec struct{}

func (protoCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("protoCodec: %T is not a message", v)
	}
	return proto.Marshal(m)
}

func (protoCodec) Unmarshal(b []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("protoCodec: %T is not a message", v)
	}
	return proto.Unmarshal(b, m)
}

// TestTheKeepersPolicyDoesNotReachTheStoredReply: the interceptor pins
// its own codec, outcome cap and classifier on its calls' scope.
func TestTheKeepersPolicyDoesNotReachTheStoredReply(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int32
	k := once.New(memory.New(nil), once.WithCodec(protoCodec{}), once.WithMaxOutcomeSize(16),
		once.WithClassifier(func(error) once.Class { return once.ClassFinal }))
	cc := dial(t, startServerOn(t, k, charger(&runs, func(in *structpb.Struct) (*wrapperspb.StringValue, error) {
		if in.Fields["amount"].GetNumberValue() == 0 {
			return nil, status.Error(codes.Unavailable, "try later")
		}
		return receipt(in)
	}), oncegrpc.Config{}))
	for i := range 2 {
		reply, header, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
		require.NoError(t, err)
		require.Equal(t, "receipt for o1", reply.GetValue())
		require.Equal(t, i == 1, len(header.Get(oncegrpc.ReplayedHeader)) == 1)
	}
	require.Equal(t, int32(1), runs.Load())
	for range 2 {
		_, _, err := call(ctx, cc, chargeMethod, "ann", "k2", order("o2", 0))
		require.Equal(t, codes.Unavailable, status.Code(err), "released, whatever the Keeper's classifier says")
	}
	require.Equal(t, int32(3), runs.Load())
}

// TestInternalErrorsAreNotSent: a failure inside the server is answered
// with a generic status; its detail goes to OnError.
func TestInternalErrorsAreNotSent(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int32
	var log errorLog
	cc := dial(t, startServer(t, memory.New(nil), charger(&runs, receipt), oncegrpc.Config{
		Scope: func(context.Context, string) (string, error) {
			return "tenant\x00secret-" + strings.Repeat("x", 300), nil
		},
		OnError: log.onError,
	}))
	_, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
	st := status.Convert(err)
	require.Equal(t, codes.Internal, st.Code())
	require.Equal(t, "oncegrpc: internal error", st.Message())
	require.Zero(t, runs.Load())
	require.Len(t, log.all(), 1)
	require.ErrorAs(t, log.all()[0], new(*once.InvalidInputError))
}

func TestEmptyScopeIsUnauthenticated(t *testing.T) {
	var runs atomic.Int32
	cc := dial(t, startServer(t, memory.New(nil), charger(&runs, receipt), oncegrpc.Config{
		Scope: func(context.Context, string) (string, error) { return "", nil },
	}))
	_, _, err := call(context.Background(), cc, chargeMethod, "ann", "k1", order("o1", 5))
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	require.Zero(t, runs.Load())
}

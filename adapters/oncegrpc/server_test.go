package oncegrpc_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncegrpc"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/testservers"
)

// TestServerInterceptor runs the server side over a real gRPC server and
// client on loopback, on every store.
func TestServerInterceptor(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			serverCases(t, newStore)
		})
	}
}

// charger counts runs per order and answers with reply or err.
func charger(runs *atomic.Int32, reply func(*structpb.Struct) (*wrapperspb.StringValue, error)) billingFunc {
	return func(_ context.Context, in *structpb.Struct) (*wrapperspb.StringValue, error) {
		runs.Add(1)
		return reply(in)
	}
}

func receipt(in *structpb.Struct) (*wrapperspb.StringValue, error) {
	return wrapperspb.String("receipt for " + in.Fields["order"].GetStringValue()), nil
}

func serverCases(t *testing.T, newStore func(testing.TB) backends.Store) {
	ctx := context.Background()

	t.Run("ReplaysTheResponse", func(t *testing.T) {
		var runs atomic.Int32
		cc := dial(t, startServer(t, newStore(t), charger(&runs, receipt), oncegrpc.Config{}))
		first, header, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
		require.NoError(t, err)
		require.Equal(t, "receipt for o1", first.GetValue())
		require.Empty(t, header.Get(oncegrpc.ReplayedHeader))
		again, header, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
		require.NoError(t, err)
		require.True(t, proto.Equal(first, again))
		require.Equal(t, []string{"true"}, header.Get(oncegrpc.ReplayedHeader))
		require.Equal(t, int32(1), runs.Load())
	})
	t.Run("ReplaysALargeResponse", func(t *testing.T) {
		var runs atomic.Int32
		large := func(*structpb.Struct) (*wrapperspb.StringValue, error) {
			return wrapperspb.String(strings.Repeat("r", 900<<10)), nil
		}
		cc := dial(t, startServer(t, newStore(t), charger(&runs, large), oncegrpc.Config{}))
		first, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
		require.NoError(t, err)
		again, header, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
		require.NoError(t, err)
		require.Len(t, again.GetValue(), 900<<10)
		require.True(t, proto.Equal(first, again))
		require.Equal(t, []string{"true"}, header.Get(oncegrpc.ReplayedHeader))
		require.Equal(t, int32(1), runs.Load())
	})
	t.Run("ScopesAreSeparate", func(t *testing.T) {
		var runs atomic.Int32
		cc := dial(t, startServer(t, newStore(t), charger(&runs, receipt), oncegrpc.Config{}))
		for _, user := range []string{"ann", "bob"} {
			_, _, err := call(ctx, cc, chargeMethod, user, "k1", order("o1", 5))
			require.NoError(t, err)
		}
		require.Equal(t, int32(2), runs.Load(), "one key, two principals, two intents")
	})
	t.Run("ReplaysAFinalStatusWithDetails", func(t *testing.T) {
		var runs atomic.Int32
		declined := func(*structpb.Struct) (*wrapperspb.StringValue, error) {
			st, err := status.New(codes.FailedPrecondition, "insufficient funds").
				WithDetails(&errdetails.ErrorInfo{Reason: "INSUFFICIENT_FUNDS", Domain: "billing"})
			require.NoError(t, err)
			return nil, st.Err()
		}
		cc := dial(t, startServer(t, newStore(t), charger(&runs, declined), oncegrpc.Config{}))
		for i := range 2 {
			_, header, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
			st := status.Convert(err)
			require.Equal(t, codes.FailedPrecondition, st.Code())
			require.Equal(t, "insufficient funds", st.Message())
			require.Len(t, st.Details(), 1)
			require.Equal(t, "INSUFFICIENT_FUNDS", st.Details()[0].(*errdetails.ErrorInfo).GetReason())
			require.Equal(t, i == 1, len(header.Get(oncegrpc.ReplayedHeader)) == 1)
		}
		require.Equal(t, int32(1), runs.Load())
	})
	t.Run("ReleasedStatusesAreNeverStored", func(t *testing.T) {
		for _, code := range []codes.Code{codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.InvalidArgument,
			codes.OutOfRange, codes.Canceled, codes.Unauthenticated, codes.Unimplemented} {
			var runs atomic.Int32
			failing := func(*structpb.Struct) (*wrapperspb.StringValue, error) {
				if runs.Load() == 1 {
					return nil, status.Error(code, "transient")
				}
				return wrapperspb.String("ok"), nil
			}
			cc := dial(t, startServer(t, newStore(t), charger(&runs, failing), oncegrpc.Config{}))
			_, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
			require.Equal(t, code, status.Code(err))
			reply, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
			require.NoError(t, err, "%v is not stored: the retry runs the handler", code)
			require.Equal(t, "ok", reply.GetValue())
			require.Equal(t, int32(2), runs.Load())
		}
	})
	t.Run("UnknownOutcomesAreHeld", func(t *testing.T) {
		for _, code := range []codes.Code{codes.DeadlineExceeded, codes.Unknown, codes.Internal, codes.DataLoss} {
			var runs atomic.Int32
			failing := func(*structpb.Struct) (*wrapperspb.StringValue, error) {
				return nil, status.Error(code, "the charge may have gone through")
			}
			cc := dial(t, startServer(t, newStore(t), charger(&runs, failing), oncegrpc.Config{}))
			_, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
			require.Equal(t, code, status.Code(err), "the first caller gets the handler's status")
			_, _, err = call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
			st := status.Convert(err)
			require.Equal(t, codes.Aborted, st.Code(), "%v holds the key", code)
			requireReason(t, st, oncegrpc.ReasonHeld)
			require.Positive(t, st.Details()[0].(*errdetails.RetryInfo).GetRetryDelay().AsDuration())
			require.Equal(t, int32(1), runs.Load(), "%v: the retry does not run the handler", code)
		}
	})
	t.Run("TheCorrectedRequestRunsWithTheSameKey", func(t *testing.T) {
		var runs atomic.Int32
		validated := func(in *structpb.Struct) (*wrapperspb.StringValue, error) {
			if in.Fields["amount"].GetNumberValue() <= 0 {
				return nil, status.Error(codes.InvalidArgument, "amount must be positive")
			}
			return receipt(in)
		}
		cc := dial(t, startServer(t, newStore(t), charger(&runs, validated), oncegrpc.Config{}))
		_, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 0))
		require.Equal(t, codes.InvalidArgument, status.Code(err))
		reply, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
		require.NoError(t, err)
		require.Equal(t, "receipt for o1", reply.GetValue())
		require.Equal(t, int32(2), runs.Load())
	})
	t.Run("ClassifyOverride", func(t *testing.T) {
		var runs atomic.Int32
		notFound := func(*structpb.Struct) (*wrapperspb.StringValue, error) {
			return nil, status.Error(codes.NotFound, "no order")
		}
		cc := dial(t, startServer(t, newStore(t), charger(&runs, notFound), oncegrpc.Config{
			Classify: func(codes.Code) once.Class { return once.ClassRetry },
		}))
		for range 2 {
			_, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
			require.Equal(t, codes.NotFound, status.Code(err))
		}
		require.Equal(t, int32(2), runs.Load())
	})
	t.Run("BadInputIsInvalidArgument", func(t *testing.T) {
		var runs atomic.Int32
		cc := dial(t, startServer(t, newStore(t), charger(&runs, receipt), oncegrpc.Config{
			Required: func(method string) bool { return method == chargeMethod },
		}))
		_, _, err := call(ctx, cc, chargeMethod, "ann", "", order("o1", 5))
		require.Equal(t, codes.InvalidArgument, status.Code(err), "missing key where required")
		_, _, err = call(ctx, cc, chargeMethod, "ann", strings.Repeat("k", 256), order("o1", 5))
		require.Equal(t, codes.InvalidArgument, status.Code(err), "key too long")
		_, _, err = call(metadata.AppendToOutgoingContext(ctx, oncegrpc.KeyHeader, "a"), cc, chargeMethod, "ann", "b", order("o1", 5))
		require.Equal(t, codes.InvalidArgument, status.Code(err), "two keys")
		require.Zero(t, runs.Load())

		_, _, err = call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
		require.NoError(t, err)
		_, _, err = call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 6))
		require.Equal(t, codes.InvalidArgument, status.Code(err), "key reused with another request")
		require.Contains(t, status.Convert(err).Message(), once.ErrKeyReused.Error())
		_, _, err = call(ctx, cc, refundMethod, "ann", "k1", order("o1", 5))
		require.Equal(t, codes.InvalidArgument, status.Code(err), "key reused on another method")
		require.Equal(t, int32(1), runs.Load())

		for range 2 {
			_, _, err = call(ctx, cc, refundMethod, "ann", "", order("o1", 5))
			require.NoError(t, err, "the key is optional where not required")
		}
		require.Equal(t, int32(3), runs.Load())
	})
	t.Run("ScopeErrorsAreTheirStatus", func(t *testing.T) {
		var runs atomic.Int32
		cc := dial(t, startServer(t, newStore(t), charger(&runs, receipt), oncegrpc.Config{
			Scope: func(ctx context.Context, _ string) (string, error) {
				md, _ := metadata.FromIncomingContext(ctx)
				if md.Get("user")[0] == "eve" {
					return "", errors.New("database down")
				}
				return userScope(ctx, "")
			},
		}))
		_, _, err := call(ctx, cc, chargeMethod, "", "k1", order("o1", 5))
		require.Equal(t, codes.Unauthenticated, status.Code(err))
		require.Equal(t, "who are you?", status.Convert(err).Message())
		_, _, err = call(ctx, cc, chargeMethod, "eve", "k1", order("o1", 5))
		require.Equal(t, codes.Unauthenticated, status.Code(err))
		require.NotContains(t, status.Convert(err).Message(), "database", "a plain error is not echoed")
		require.Zero(t, runs.Load())
	})
	t.Run("InProgressIsAbortedWithRetryInfo", func(t *testing.T) {
		var runs atomic.Int32
		started, release := make(chan struct{}), make(chan struct{})
		slow := func(in *structpb.Struct) (*wrapperspb.StringValue, error) {
			close(started)
			<-release
			return receipt(in)
		}
		cc := dial(t, startServer(t, newStore(t), charger(&runs, slow), oncegrpc.Config{}))
		first := make(chan error, 1)
		go func() { _, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5)); first <- err }()
		<-started
		_, _, err := call(ctx, cc, chargeMethod, "ann", "k1", order("o1", 5))
		st := status.Convert(err)
		require.Equal(t, codes.Aborted, st.Code())
		require.Len(t, st.Details(), 2)
		require.Positive(t, st.Details()[0].(*errdetails.RetryInfo).GetRetryDelay().AsDuration())
		requireReason(t, st, oncegrpc.ReasonInProgress)
		close(release)
		require.NoError(t, <-first)
		require.Equal(t, int32(1), runs.Load())
	})
	t.Run("ConcurrentDuplicatesThroughTheClientInterceptor", func(t *testing.T) {
		var runs atomic.Int32
		addr := startServer(t, newStore(t), charger(&runs, receipt), oncegrpc.Config{})
		cc := dial(t, addr, grpcClientInterceptor(t, &oncegrpc.ClientConfig{MaxAttempts: 50}))
		var wg sync.WaitGroup
		replies := make([]string, 16)
		errs := make([]error, 16)
		for i := range 16 {
			wg.Go(func() {
				ictx := oncegrpc.WithKey(ctx, "order-o1")
				r, _, err := call(ictx, cc, chargeMethod, "ann", "", order("o1", 5))
				replies[i], errs[i] = r.GetValue(), err
			})
		}
		wg.Wait()
		for i := range 16 {
			require.NoError(t, errs[i])
			require.Equal(t, "receipt for o1", replies[i])
		}
		require.Equal(t, int32(1), runs.Load())
	})
}

func TestServerInterceptorNeedsAScope(t *testing.T) {
	_, err := oncegrpc.ServerInterceptor(once.New(nil), oncegrpc.Config{})
	require.ErrorIs(t, err, oncegrpc.ErrNoScope)
	_, err = oncegrpc.ServerInterceptor(nil, oncegrpc.Config{Scope: userScope})
	var ce *oncegrpc.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Keeper", ce.Field)
}

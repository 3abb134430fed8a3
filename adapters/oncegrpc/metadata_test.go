package oncegrpc_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/stagedoor/once/adapters/oncegrpc"
	"github.com/stagedoor/once/backends/memory"
)

// withMetadata sets a header and a trailer per key, and answers with a
// receipt, or FailedPrecondition for an amount over 100.
func withMetadata(runs *atomic.Int32) billingFunc {
	return func(ctx context.Context, in *structpb.Struct) (*wrapperspb.StringValue, error) {
		runs.Add(1)
		_ = grpc.SetHeader(ctx, metadata.Pairs("x-order-id", "42", "x-session", "s1"))
		_ = grpc.SetTrailer(ctx, metadata.Pairs("X-Charge-Id", "ch_1"))
		if in.Fields["amount"].GetNumberValue() > 100 {
			return nil, status.Error(codes.FailedPrecondition, "insufficient funds")
		}
		return receipt(in)
	}
}

func invokeWithMetadata(t *testing.T, cc *grpc.ClientConn, key string, amount float64) (header, trailer metadata.MD, err error) {
	t.Helper()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "user", "ann", oncegrpc.KeyHeader, key)
	err = cc.Invoke(ctx, chargeMethod, order("o1", amount), new(wrapperspb.StringValue), grpc.Header(&header), grpc.Trailer(&trailer))
	return header, trailer, err
}

// TestStoreMetadataIsReplayed: the listed header and trailer keys come
// back on a replay, of a response and of a final status; the others only
// reach the call that ran the handler.
func TestStoreMetadataIsReplayed(t *testing.T) {
	var runs atomic.Int32
	cc := dial(t, startServer(t, memory.New(nil), withMetadata(&runs), oncegrpc.Config{
		StoreMetadata: []string{"X-Order-Id", "x-charge-id"},
	}))
	for _, c := range []struct {
		key    string
		amount float64
		code   codes.Code
	}{{"k1", 5, codes.OK}, {"k2", 500, codes.FailedPrecondition}} {
		for i := range 2 {
			header, trailer, err := invokeWithMetadata(t, cc, c.key, c.amount)
			require.Equal(t, c.code, status.Code(err))
			require.Equal(t, []string{"42"}, header.Get("x-order-id"), "call %d", i)
			require.Equal(t, []string{"ch_1"}, trailer.Get("x-charge-id"), "call %d", i)
			require.Equal(t, i == 1, len(header.Get(oncegrpc.ReplayedHeader)) == 1)
			require.Equal(t, i == 0, len(header.Get("x-session")) == 1, "not listed: only the first call has it")
		}
	}
	require.Equal(t, int32(2), runs.Load())
}

// TestMetadataIsNotReplayedByDefault: without StoreMetadata, a replay
// carries only idempotent-replayed, as documented.
func TestMetadataIsNotReplayedByDefault(t *testing.T) {
	var runs atomic.Int32
	cc := dial(t, startServer(t, memory.New(nil), withMetadata(&runs), oncegrpc.Config{}))
	header, trailer, err := invokeWithMetadata(t, cc, "k1", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"42"}, header.Get("x-order-id"))
	require.Equal(t, []string{"ch_1"}, trailer.Get("x-charge-id"))
	header, trailer, err = invokeWithMetadata(t, cc, "k1", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"true"}, header.Get(oncegrpc.ReplayedHeader))
	require.Empty(t, header.Get("x-order-id"))
	require.Empty(t, trailer.Get("x-charge-id"))
	require.Equal(t, int32(1), runs.Load())
}

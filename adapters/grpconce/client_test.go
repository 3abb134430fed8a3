package grpconce_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/grpconce"
	"github.com/stagedoor/once/backends/memory"
)

func grpcClientInterceptor(cfg *grpconce.ClientConfig) grpc.DialOption {
	return grpc.WithUnaryInterceptor(grpconce.ClientInterceptor(cfg))
}

// keyRecorder records the key of every attempt and fails the first fail
// attempts with code.
type keyRecorder struct {
	mu   sync.Mutex
	keys []string
	fail int
	code codes.Code
}

func (r *keyRecorder) Charge(ctx context.Context, in *structpb.Struct) (*wrapperspb.StringValue, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, md.Get(grpconce.KeyHeader)...)
	if len(r.keys) <= r.fail {
		return nil, status.Error(r.code, "try again")
	}
	return wrapperspb.String("ok"), nil
}

func (r *keyRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

func fastRetries() *grpconce.ClientConfig {
	return &grpconce.ClientConfig{BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
}

func TestClientOneKeyPerIntent(t *testing.T) {
	ctx := context.Background()
	for _, code := range []codes.Code{codes.Unavailable, codes.ResourceExhausted} {
		rec := &keyRecorder{fail: 2, code: code}
		cc := dial(t, startServer(t, memory.New(nil), rec, grpconce.Config{}), grpcClientInterceptor(fastRetries()))
		_, _, err := call(ctx, cc, chargeMethod, "ann", "", order("o1", 5))
		require.NoError(t, err, "%v is retried", code)
		keys := rec.seen()
		require.Len(t, keys, 3)
		require.NotEmpty(t, keys[0])
		require.Equal(t, []string{keys[0], keys[0], keys[0]}, keys, "one key on every attempt")
		_, _, err = call(ctx, cc, chargeMethod, "ann", "", order("o1", 5))
		require.NoError(t, err)
		require.NotEqual(t, keys[0], rec.seen()[3], "a new call is a new intent")
	}
}

func TestClientKeepsTheCallersKey(t *testing.T) {
	ctx := context.Background()
	rec := &keyRecorder{}
	cc := dial(t, startServer(t, memory.New(nil), rec, grpconce.Config{}), grpcClientInterceptor(nil))
	_, _, err := call(grpconce.WithKey(ctx, once.DerivedKey("order", "o1")), cc, chargeMethod, "ann", "", order("o1", 5))
	require.NoError(t, err)
	_, _, err = call(ctx, cc, chargeMethod, "ann", "explicit", order("o1", 5))
	require.NoError(t, err)
	require.Equal(t, []string{"order-o1", "explicit"}, rec.seen())
}

func TestClientDoesNotRetryFinalOrUnsafeCodes(t *testing.T) {
	ctx := context.Background()
	for _, code := range []codes.Code{codes.InvalidArgument, codes.FailedPrecondition, codes.Aborted, codes.Internal, codes.DeadlineExceeded, codes.Unknown} {
		rec := &keyRecorder{fail: 1, code: code}
		cc := dial(t, startServer(t, memory.New(nil), rec, grpconce.Config{}), grpcClientInterceptor(fastRetries()))
		_, _, err := call(ctx, cc, chargeMethod, "ann", "", order("o1", 5))
		require.Equal(t, code, status.Code(err))
		require.Len(t, rec.seen(), 1, "%v is not retried", code)
	}
}

func TestClientStopsAtMaxAttemptsAndTheDeadline(t *testing.T) {
	ctx := context.Background()
	rec := &keyRecorder{fail: 1000, code: codes.Unavailable}
	addr := startServer(t, memory.New(nil), rec, grpconce.Config{})
	cc := dial(t, addr, grpcClientInterceptor(&grpconce.ClientConfig{MaxAttempts: 3, BaseBackoff: time.Millisecond}))
	_, _, err := call(ctx, cc, chargeMethod, "ann", "", order("o1", 5))
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Len(t, rec.seen(), 3)

	cc = dial(t, addr, grpcClientInterceptor(&grpconce.ClientConfig{MaxAttempts: 1000, BaseBackoff: 20 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}))
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	before := len(rec.seen())
	_, _, err = call(dctx, cc, chargeMethod, "ann", "", order("o1", 5))
	require.Contains(t, []codes.Code{codes.Unavailable, codes.DeadlineExceeded}, status.Code(err))
	attempts := len(rec.seen()) - before
	require.Greater(t, attempts, 1)
	require.Less(t, attempts, 1000, "the deadline ended the retries")
}

func TestClientRetriesConnectionErrors(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close()) // nothing listens yet: connection refused
	var attempts atomic.Int32
	counting := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if attempts.Add(1) == 2 {
			startAt(t, addr)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	cc := dial(t, addr,
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, MaxDelay: 50 * time.Millisecond}}),
		grpc.WithChainUnaryInterceptor(
			grpconce.ClientInterceptor(&grpconce.ClientConfig{MaxAttempts: 50, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}),
			counting))
	reply, _, err := call(context.Background(), cc, chargeMethod, "ann", "", order("o1", 5))
	require.NoError(t, err)
	require.Equal(t, "ok", reply.GetValue())
	require.GreaterOrEqual(t, attempts.Load(), int32(2), "the first attempt met a refused connection")
}

// startAt serves a keyRecorder on addr.
func startAt(t *testing.T, addr string) {
	lis, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	icpt, err := grpconce.ServerInterceptor(once.New(nil), grpconce.Config{Scope: userScope})
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.UnaryInterceptor(icpt))
	srv.RegisterService(&billingDesc, &keyRecorder{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
}

func TestClientRetriesAnInProgressDuplicateUntilTheReplay(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	slow := billingFunc(func(_ context.Context, in *structpb.Struct) (*wrapperspb.StringValue, error) {
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		return receipt(in)
	})
	cc := dial(t, startServer(t, memory.New(nil), slow, grpconce.Config{}), grpcClientInterceptor(&grpconce.ClientConfig{MaxAttempts: 100, MaxBackoff: 20 * time.Millisecond}))
	first := make(chan error, 1)
	kctx := grpconce.WithKey(ctx, "k1")
	go func() { _, _, err := call(kctx, cc, chargeMethod, "ann", "", order("o1", 5)); first <- err }()
	<-started
	second := make(chan error, 1)
	var header metadata.MD
	go func() {
		var err error
		_, header, err = call(kctx, cc, chargeMethod, "ann", "", order("o1", 5))
		second <- err
	}()
	time.AfterFunc(50*time.Millisecond, func() { close(release) })
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	require.Equal(t, []string{"true"}, header.Get(grpconce.ReplayedHeader))
	require.Equal(t, int32(1), runs.Load())
}

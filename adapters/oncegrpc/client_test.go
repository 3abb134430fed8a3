package oncegrpc_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncegrpc"
	"github.com/stagedoor/once/backends/memory"
)

func grpcClientInterceptor(t *testing.T, cfg *oncegrpc.ClientConfig) grpc.DialOption {
	return grpc.WithUnaryInterceptor(clientInterceptor(t, cfg))
}

func clientInterceptor(t *testing.T, cfg *oncegrpc.ClientConfig) grpc.UnaryClientInterceptor {
	t.Helper()
	icpt, err := oncegrpc.ClientInterceptor(cfg)
	require.NoError(t, err)
	return icpt
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
	r.keys = append(r.keys, md.Get(oncegrpc.KeyHeader)...)
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

func fastRetries() *oncegrpc.ClientConfig {
	return &oncegrpc.ClientConfig{Methods: oncegrpc.Methods(chargeMethod), BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
}

func TestClientOneKeyPerIntent(t *testing.T) {
	ctx := context.Background()
	for _, code := range []codes.Code{codes.Unavailable, codes.ResourceExhausted} {
		rec := &keyRecorder{fail: 2, code: code}
		cc := dial(t, startServer(t, memory.New(nil), rec, oncegrpc.Config{}), grpcClientInterceptor(t, fastRetries()))
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
	cc := dial(t, startServer(t, memory.New(nil), rec, oncegrpc.Config{}), grpcClientInterceptor(t, nil))
	_, _, err := call(oncegrpc.WithKey(ctx, once.DerivedKey("order", "o1")), cc, chargeMethod, "ann", "", order("o1", 5))
	require.NoError(t, err)
	_, _, err = call(ctx, cc, chargeMethod, "ann", "explicit", order("o1", 5))
	require.NoError(t, err)
	require.Equal(t, []string{"order-o1", "explicit"}, rec.seen())
}

func TestClientDoesNotRetryFinalOrUnsafeCodes(t *testing.T) {
	ctx := context.Background()
	for _, code := range []codes.Code{codes.InvalidArgument, codes.FailedPrecondition, codes.Aborted, codes.Internal, codes.DeadlineExceeded, codes.Unknown} {
		rec := &keyRecorder{fail: 1, code: code}
		cc := dial(t, startServer(t, memory.New(nil), rec, oncegrpc.Config{}), grpcClientInterceptor(t, fastRetries()))
		_, _, err := call(ctx, cc, chargeMethod, "ann", "", order("o1", 5))
		require.Equal(t, code, status.Code(err))
		require.Len(t, rec.seen(), 1, "%v is not retried", code)
	}
}

func TestClientStopsAtMaxAttemptsAndTheDeadline(t *testing.T) {
	ctx := context.Background()
	rec := &keyRecorder{fail: 1000, code: codes.Unavailable}
	addr := startServer(t, memory.New(nil), rec, oncegrpc.Config{})
	cc := dial(t, addr, grpcClientInterceptor(t, &oncegrpc.ClientConfig{Methods: oncegrpc.Methods(chargeMethod), MaxAttempts: 3, BaseBackoff: time.Millisecond}))
	_, _, err := call(ctx, cc, chargeMethod, "ann", "", order("o1", 5))
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Len(t, rec.seen(), 3)

	cc = dial(t, addr, grpcClientInterceptor(t, &oncegrpc.ClientConfig{Methods: oncegrpc.Methods(chargeMethod), MaxAttempts: 1000, BaseBackoff: 20 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}))
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
			clientInterceptor(t, &oncegrpc.ClientConfig{Methods: oncegrpc.Methods(chargeMethod), MaxAttempts: 50, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}),
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
	icpt, err := oncegrpc.ServerInterceptor(once.New(nil), oncegrpc.Config{Scope: userScope})
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
	cc := dial(t, startServer(t, memory.New(nil), slow, oncegrpc.Config{}), grpcClientInterceptor(t, &oncegrpc.ClientConfig{MaxAttempts: 100, MaxBackoff: 20 * time.Millisecond}))
	first := make(chan error, 1)
	kctx := oncegrpc.WithKey(ctx, "k1")
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
	require.Equal(t, []string{"true"}, header.Get(oncegrpc.ReplayedHeader))
	require.Equal(t, int32(1), runs.Load())
}

// TestClientKeysOnlyWhatItIsTold: by default only a call that carries a
// key of its caller's is keyed; Methods adds random keys for the listed
// methods. A read through the default interceptor is not recorded.
func TestClientKeysOnlyWhatItIsTold(t *testing.T) {
	ctx := context.Background()
	var recorded atomic.Int32
	k := once.New(memory.New(nil), once.WithObserver(func(_ context.Context, e once.Event) {
		if e.Kind == once.EventRecorded {
			recorded.Add(1)
		}
	}))
	rec := &keyRecorder{}
	addr := startServerOn(t, k, rec, oncegrpc.Config{})
	cc := dial(t, addr, grpcClientInterceptor(t, nil))
	for range 5 {
		_, _, err := call(ctx, cc, refundMethod, "ann", "", order("o1", 1))
		require.NoError(t, err)
	}
	require.Empty(t, rec.seen(), "no key on a call nobody asked to key")
	require.Zero(t, recorded.Load())
	_, _, err := call(oncegrpc.WithKey(ctx, "order-o1"), cc, refundMethod, "ann", "", order("o1", 1))
	require.NoError(t, err)
	require.Equal(t, []string{"order-o1"}, rec.seen())
	require.Equal(t, int32(1), recorded.Load())

	cc = dial(t, addr, grpcClientInterceptor(t, &oncegrpc.ClientConfig{Methods: oncegrpc.Methods(chargeMethod)}))
	_, _, err = call(ctx, cc, refundMethod, "ann", "", order("o1", 1))
	require.NoError(t, err)
	require.Len(t, rec.seen(), 1, "Refund is not listed")
	_, _, err = call(ctx, cc, chargeMethod, "ann", "", order("o1", 1))
	require.NoError(t, err)
	require.Len(t, rec.seen(), 2, "Charge is")
	require.NotEmpty(t, rec.seen()[1])
}

// countAttempts is a client interceptor, inside ClientInterceptor, that
// counts its attempts and runs after each one.
func countAttempts(n *atomic.Int32, after func()) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		n.Add(1)
		err := invoker(ctx, method, req, reply, cc, opts...)
		if after != nil {
			after()
		}
		return err
	}
}

// TestClientReturnsAHeldKey: a key whose outcome is unknown (held by the
// server) is not retried: waiting out the hold is the caller's decision.
func TestClientReturnsAHeldKey(t *testing.T) {
	ctx := oncegrpc.WithKey(context.Background(), "order-o1")
	var runs atomic.Int32
	var attempts atomic.Int32
	cc := dial(t, startServer(t, memory.New(nil), charger(&runs, func(*structpb.Struct) (*wrapperspb.StringValue, error) {
		return nil, status.Error(codes.Internal, "the charge may have gone through")
	}), oncegrpc.Config{}), grpc.WithChainUnaryInterceptor(clientInterceptor(t, fastRetries()), countAttempts(&attempts, nil)))
	_, _, err := call(ctx, cc, chargeMethod, "ann", "", order("o1", 5))
	require.Equal(t, codes.Internal, status.Code(err))
	require.Equal(t, int32(1), attempts.Load())

	attempts.Store(0)
	_, _, err = call(ctx, cc, chargeMethod, "ann", "", order("o1", 5))
	st := status.Convert(err)
	require.Equal(t, codes.Aborted, st.Code(), st.Message())
	requireReason(t, st, oncegrpc.ReasonHeld)
	require.Equal(t, int32(1), attempts.Load(), "one attempt")
	require.Equal(t, int32(1), runs.Load())
}

// TestClientReturnsTheContextsErrorDuringBackoff: a context that ends
// while the interceptor waits to retry ends the call with its own error,
// which wraps the last attempt's.
func TestClientReturnsTheContextsErrorDuringBackoff(t *testing.T) {
	var runs atomic.Int32
	addr := startServer(t, memory.New(nil), charger(&runs, func(*structpb.Struct) (*wrapperspb.StringValue, error) {
		st, err := status.New(codes.ResourceExhausted, "quota").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Hour)})
		require.NoError(t, err)
		return nil, st.Err()
	}), oncegrpc.Config{})
	ctx, cancel := context.WithCancel(oncegrpc.WithKey(context.Background(), "order-o1"))
	defer cancel()
	var attempts atomic.Int32
	cc := dial(t, addr, grpc.WithChainUnaryInterceptor(
		clientInterceptor(t, &oncegrpc.ClientConfig{MaxRetryDelay: 2 * time.Hour}),
		countAttempts(&attempts, cancel)))
	_, _, err := call(ctx, cc, chargeMethod, "ann", "", order("o1", 5))
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, codes.Canceled, status.Code(err))
	require.Contains(t, err.Error(), "quota", "the last attempt's error is wrapped")
	require.Equal(t, int32(1), attempts.Load())
}

package oncegrpc_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncegrpc"
	"github.com/stagedoor/once/backends"
)

// A hand-written service over well-known types, so that the tests need no
// generated code.
const (
	chargeMethod = "/once.test.Billing/Charge"
	refundMethod = "/once.test.Billing/Refund"
)

type billing interface {
	Charge(context.Context, *structpb.Struct) (*wrapperspb.StringValue, error)
}

type billingFunc func(context.Context, *structpb.Struct) (*wrapperspb.StringValue, error)

func (f billingFunc) Charge(ctx context.Context, in *structpb.Struct) (*wrapperspb.StringValue, error) {
	return f(ctx, in)
}

func unaryHandler(method string) func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
	return func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(structpb.Struct)
		if err := dec(in); err != nil {
			return nil, err
		}
		call := func(ctx context.Context, req any) (any, error) {
			return srv.(billing).Charge(ctx, req.(*structpb.Struct))
		}
		if icpt == nil {
			return call(ctx, in)
		}
		return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: method}, call)
	}
}

var billingDesc = grpc.ServiceDesc{
	ServiceName: "once.test.Billing",
	HandlerType: (*billing)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Charge", Handler: unaryHandler(chargeMethod)},
		{MethodName: "Refund", Handler: unaryHandler(refundMethod)},
	},
}

// userScope is the test's authentication: the "user" metadata.
func userScope(ctx context.Context, _ string) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if u := md.Get("user"); len(u) == 1 && u[0] != "" {
		return "user-" + u[0], nil
	}
	return "", status.Error(codes.Unauthenticated, "who are you?")
}

// startServer serves impl on 127.0.0.1 behind the interceptor and returns
// its address.
func startServer(t *testing.T, store backends.Store, impl billing, cfg oncegrpc.Config) string {
	t.Helper()
	if cfg.Scope == nil {
		cfg.Scope = userScope
	}
	return startServerOn(t, once.New(store), impl, cfg)
}

// startServerOn is startServer with a Keeper of the caller's.
func startServerOn(t *testing.T, k *once.Keeper, impl billing, cfg oncegrpc.Config) string {
	t.Helper()
	if cfg.Scope == nil {
		cfg.Scope = userScope
	}
	icpt, err := oncegrpc.ServerInterceptor(k, cfg)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.UnaryInterceptor(icpt))
	srv.RegisterService(&billingDesc, impl)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func dial(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// call invokes method as user with key (none when empty) and returns the
// reply, the response header and the error.
func call(ctx context.Context, cc *grpc.ClientConn, method, user, key string, req *structpb.Struct) (*wrapperspb.StringValue, metadata.MD, error) {
	pairs := []string{"user", user}
	if key != "" {
		pairs = append(pairs, oncegrpc.KeyHeader, key)
	}
	ctx = metadata.AppendToOutgoingContext(ctx, pairs...)
	reply := new(wrapperspb.StringValue)
	var header metadata.MD
	err := cc.Invoke(ctx, method, req, reply, grpc.Header(&header))
	return reply, header, err
}

func order(id string, amount float64) *structpb.Struct {
	s, err := structpb.NewStruct(map[string]any{"order": id, "amount": amount})
	if err != nil {
		panic(err)
	}
	return s
}

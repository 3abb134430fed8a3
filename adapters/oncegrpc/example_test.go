package oncegrpc_test

import (
	"context"
	"log"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncegrpc"
)

// principal stands for the application's authentication, which the scope
// comes from.
func principal(ctx context.Context) (string, bool) { return "user-42", ctx != nil }

// Serve with the interceptor: a call retried with the same idempotency-key
// gets the stored response without running the handler again.
func ExampleServerInterceptor() {
	icpt, err := oncegrpc.ServerInterceptor(once.New(nil), oncegrpc.Config{
		Scope: func(ctx context.Context, _ string) (string, error) {
			if user, ok := principal(ctx); ok {
				return user, nil
			}
			return "", status.Error(codes.Unauthenticated, "sign in")
		},
		Required: oncegrpc.Methods("/shop.Billing/Charge"),
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(icpt))
	// shoppb.RegisterBillingServer(srv, &billing{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	srv.Stop()
}

// Dial with the client interceptor: every attempt of a keyed call carries
// the same key, and Unavailable, ResourceExhausted and in-progress answers
// are retried with it. Only the methods with effects are keyed; reads pass
// through untouched.
func ExampleClientInterceptor() {
	icpt, err := oncegrpc.ClientInterceptor(&oncegrpc.ClientConfig{
		Methods: oncegrpc.Methods("/shop.Billing/Charge", "/shop.Billing/Refund"),
	})
	if err != nil {
		log.Fatal(err) // a *oncegrpc.ConfigError: a negative MaxAttempts, ...
	}
	cc, err := grpc.NewClient("127.0.0.1:50051",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(icpt))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	// The key of the intent, the same after a crash and a restart:
	ctx := oncegrpc.WithKey(context.Background(), once.DerivedKey("charge", "order-42"))
	_ = ctx // billing := shoppb.NewBillingClient(cc); billing.Charge(ctx, req)
}

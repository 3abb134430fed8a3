package grpconce

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Defaults of ClientConfig.
const (
	DefaultMaxAttempts = 4
	DefaultBaseBackoff = 50 * time.Millisecond
	DefaultMaxBackoff  = 2 * time.Second
)

// ClientConfig configures ClientInterceptor. A nil *ClientConfig means the
// defaults.
type ClientConfig struct {
	// Methods reports whether calls of fullMethod get a key and retries.
	// Defaults to nil: every unary method.
	Methods func(fullMethod string) bool
	// MaxAttempts bounds the attempts of one call, the first included.
	// Defaults to DefaultMaxAttempts; 1 attaches the key without retrying.
	MaxAttempts int
	// BaseBackoff and MaxBackoff shape the pause before attempt n (n ≥ 1):
	// a random duration up to min(MaxBackoff, BaseBackoff·2^(n-1)) — full
	// jitter — or the server's RetryInfo delay when it asks for longer,
	// capped at MaxBackoff. Default to DefaultBaseBackoff and
	// DefaultMaxBackoff.
	BaseBackoff, MaxBackoff time.Duration
}

type keyContext struct{}

// WithKey returns a context whose calls carry key as their idempotency key:
// the key of the caller's intent, the same on every retry of every restart
// (for example once.DerivedKey("order", orderID)). Without it, the client
// interceptor draws a random key per call, which protects the retries of
// that call but not a retry of the whole operation after a crash.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyContext{}, key)
}

// ClientInterceptor returns a unary client interceptor that attaches one
// idempotency key per call to every attempt and retries the attempts that
// are safe to retry, as the package documentation describes. A key
// already in the outgoing metadata is kept.
func ClientInterceptor(cfg *ClientConfig) grpc.UnaryClientInterceptor {
	c := ClientConfig{MaxAttempts: DefaultMaxAttempts, BaseBackoff: DefaultBaseBackoff, MaxBackoff: DefaultMaxBackoff}
	if cfg != nil {
		c.Methods = cfg.Methods
		if cfg.MaxAttempts > 0 {
			c.MaxAttempts = cfg.MaxAttempts
		}
		if cfg.BaseBackoff > 0 {
			c.BaseBackoff = cfg.BaseBackoff
		}
		if cfg.MaxBackoff > 0 {
			c.MaxBackoff = cfg.MaxBackoff
		}
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if c.Methods != nil && !c.Methods(method) {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		ctx = withOutgoingKey(ctx)
		var err error
		for attempt := 1; ; attempt++ {
			err = invoker(ctx, method, req, reply, cc, opts...)
			if err == nil || attempt >= c.MaxAttempts {
				return err
			}
			delay, retry := c.retryDelay(err, attempt)
			if !retry {
				return err
			}
			if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= delay {
				return err
			}
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
		}
	}
}

// withOutgoingKey makes sure the outgoing metadata carries a key.
func withOutgoingKey(ctx context.Context) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	if len(md.Get(KeyHeader)) > 0 {
		return ctx
	}
	key, _ := ctx.Value(keyContext{}).(string)
	if key == "" {
		key = randomKey()
	}
	return metadata.AppendToOutgoingContext(ctx, KeyHeader, key)
}

func randomKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// retryDelay says whether err is safe and worth retrying with the same key
// and how long to wait before attempt+1.
func (c ClientConfig) retryDelay(err error, attempt int) (time.Duration, bool) {
	st := status.Convert(err)
	var asked time.Duration
	hasRetryInfo := false
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			asked, hasRetryInfo = ri.GetRetryDelay().AsDuration(), true
		}
	}
	switch st.Code() {
	case codes.Unavailable, codes.ResourceExhausted:
	case codes.Aborted:
		if !hasRetryInfo {
			return 0, false
		}
	default:
		return 0, false
	}
	ceiling := min(c.BaseBackoff, c.MaxBackoff)
	for i := 1; i < attempt && ceiling < c.MaxBackoff; i++ {
		if ceiling > c.MaxBackoff/2 {
			ceiling = c.MaxBackoff
		} else {
			ceiling *= 2
		}
	}
	delay := time.Duration(rand.Int64N(int64(ceiling) + 1))
	if asked > delay {
		delay = min(asked, c.MaxBackoff)
	}
	return delay, true
}

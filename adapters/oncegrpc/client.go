package oncegrpc

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"math"
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
	DefaultMaxAttempts   = 4
	DefaultBaseBackoff   = 50 * time.Millisecond
	DefaultMaxBackoff    = 2 * time.Second
	DefaultMaxRetryDelay = 30 * time.Second
)

// ClientConfig configures ClientInterceptor. A nil *ClientConfig means the
// defaults.
type ClientConfig struct {
	// Methods reports whether calls of fullMethod that carry no key of
	// their caller's get a random one (and retries with it). Defaults to
	// nil: no method does, so that reads are not stored for the
	// retention; list the methods with effects, e.g.
	// Methods("/shop.Billing/Charge"). A call that carries a key — WithKey,
	// or an "idempotency-key" already in its outgoing metadata — is keyed
	// and retried whatever Methods says; every other call passes through
	// untouched.
	Methods func(fullMethod string) bool
	// MaxAttempts bounds the attempts of one call, the first included.
	// Defaults to DefaultMaxAttempts (4) when zero; 1 attaches the key
	// without retrying; must not be negative.
	MaxAttempts int
	// BaseBackoff and MaxBackoff shape the pause before attempt n (n ≥ 1):
	// a random duration up to min(MaxBackoff, BaseBackoff·2^(n-1)) — full
	// jitter — or the server's RetryInfo delay when it asks for longer.
	// Default to DefaultBaseBackoff (50 ms) and DefaultMaxBackoff (2 s)
	// when zero; must not be negative. A MaxBackoff below BaseBackoff caps
	// every pause at MaxBackoff.
	BaseBackoff, MaxBackoff time.Duration
	// MaxRetryDelay is the longest RetryInfo delay the interceptor waits
	// for: a server that asks for longer gets its answer returned to the
	// caller at once, since waiting less than it asked would only meet the
	// same answer. Defaults to DefaultMaxRetryDelay (30 s) when zero; must
	// not be negative.
	MaxRetryDelay time.Duration
}

// Methods returns a ClientConfig.Methods (or Config.Required) that reports
// true for the listed full method names ("/package.Service/Method") only.
func Methods(fullMethods ...string) func(fullMethod string) bool {
	set := make(map[string]bool, len(fullMethods))
	for _, m := range fullMethods {
		set[m] = true
	}
	return func(fullMethod string) bool { return set[fullMethod] }
}

type keyContext struct{}

// WithKey returns a context whose calls carry key as their idempotency key:
// the key of the caller's intent, the same on every retry of every restart
// (for example once.DerivedKey("order", orderID)). Such a call is keyed and
// retried by the client interceptor whatever ClientConfig.Methods says.
// Without it, a call of a method that ClientConfig.Methods lists gets a
// random key, which protects the retries of that call but not a retry of
// the whole operation after a crash.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyContext{}, key)
}

// ClientInterceptor returns a unary client interceptor that attaches one
// idempotency key per call to every attempt and retries the attempts that
// are safe to retry, as the package documentation describes. A key
// already in the outgoing metadata is kept. It returns a *ConfigError
// (errors.Is ErrInvalidConfig) and no interceptor for a negative
// MaxAttempts, BaseBackoff, MaxBackoff or MaxRetryDelay; a zero field
// takes its default.
func ClientInterceptor(cfg *ClientConfig) (grpc.UnaryClientInterceptor, error) {
	c := ClientConfig{MaxAttempts: DefaultMaxAttempts, BaseBackoff: DefaultBaseBackoff, MaxBackoff: DefaultMaxBackoff, MaxRetryDelay: DefaultMaxRetryDelay}
	if cfg != nil {
		for _, f := range []struct {
			name     string
			negative bool
		}{
			{"MaxAttempts", cfg.MaxAttempts < 0},
			{"BaseBackoff", cfg.BaseBackoff < 0},
			{"MaxBackoff", cfg.MaxBackoff < 0},
			{"MaxRetryDelay", cfg.MaxRetryDelay < 0},
		} {
			if f.negative {
				return nil, &ConfigError{Field: f.name, Reason: "negative"}
			}
		}
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
		if cfg.MaxRetryDelay > 0 {
			c.MaxRetryDelay = cfg.MaxRetryDelay
		}
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx, keyed := c.withOutgoingKey(ctx, method)
		if !keyed {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
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
				return &backoffEndedError{ctxErr: ctx.Err(), last: err}
			case <-t.C:
			}
		}
	}, nil
}

// backoffEndedError is returned when the call's context ends while the
// interceptor waits to retry: its status is the context's (Canceled or
// DeadlineExceeded), errors.Is finds the context's error, and it wraps the
// last attempt's error too.
type backoffEndedError struct{ ctxErr, last error }

func (e *backoffEndedError) Error() string {
	return "oncegrpc: " + e.ctxErr.Error() + " while waiting to retry; last attempt: " + e.last.Error()
}

func (e *backoffEndedError) Unwrap() []error { return []error{e.ctxErr, e.last} }

// GRPCStatus makes status.Code and status.FromError see the context's code.
func (e *backoffEndedError) GRPCStatus() *status.Status {
	code := codes.Canceled
	if errors.Is(e.ctxErr, context.DeadlineExceeded) {
		code = codes.DeadlineExceeded
	}
	return status.New(code, e.Error())
}

// withOutgoingKey makes sure the outgoing metadata of a call that is to be
// keyed carries a key; keyed is false for a call left as it is.
func (c ClientConfig) withOutgoingKey(ctx context.Context, method string) (_ context.Context, keyed bool) {
	md, _ := metadata.FromOutgoingContext(ctx)
	if len(md.Get(KeyHeader)) > 0 {
		return ctx, true
	}
	key, _ := ctx.Value(keyContext{}).(string)
	if key == "" {
		if c.Methods == nil || !c.Methods(method) {
			return ctx, false
		}
		key = randomKey()
	}
	return metadata.AppendToOutgoingContext(ctx, KeyHeader, key), true
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
	hasRetryInfo, held := false, false
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			if d.GetRetryDelay() != nil {
				asked, hasRetryInfo = d.GetRetryDelay().AsDuration(), true
			}
		case *errdetails.ErrorInfo:
			held = held || (d.GetDomain() == ErrorDomain && d.GetReason() == ReasonHeld)
		}
	}
	switch st.Code() {
	case codes.Unavailable, codes.ResourceExhausted:
	case codes.Aborted:
		if !hasRetryInfo || held {
			return 0, false // not a duplicate in progress; or a held key: its outcome is unknown
		}
	default:
		return 0, false
	}
	if asked > c.MaxRetryDelay {
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
	n := int64(ceiling) // ≥ 1: BaseBackoff and MaxBackoff are positive
	if n < math.MaxInt64 {
		n++ // up to ceiling inclusive, without overflowing at math.MaxInt64
	}
	return max(time.Duration(rand.Int64N(n)), asked), true
}

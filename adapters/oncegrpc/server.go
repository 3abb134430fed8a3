package oncegrpc

import (
	"context"
	"errors"
	"math"
	"slices"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/hashers"
)

// ErrNoScope: ServerInterceptor was given no Config.Scope. There is no
// default, because keys must never be shared between callers. It is
// wrapped by the *ConfigError (Field "Scope") that ServerInterceptor
// returns.
var ErrNoScope = errors.New("oncegrpc: Config.Scope is required")

// DefaultMaxStoredResponse is the default Config.MaxStoredResponse: 1 MiB,
// as oncehttp's DefaultMaxStoredBody.
const DefaultMaxStoredResponse = 1 << 20

// metadataBudget is the room left for the type name, the stored metadata
// and the framing when the interceptor sizes the Keeper's outcome cap for
// its calls.
const metadataBudget = 64 << 10

// Config configures ServerInterceptor.
type Config struct {
	// Scope returns the scope of a call: the authenticated principal, so
	// that callers never see each other's keys. An error answers the call
	// with its status if it has one (other than Unknown), Unauthenticated
	// otherwise; an empty scope with a nil error is answered
	// Unauthenticated too. The error's text is never sent unless it is a
	// status. Required.
	Scope func(ctx context.Context, fullMethod string) (string, error)
	// Required reports whether a call of fullMethod must carry a key: a
	// call without one is answered InvalidArgument. A method for which it
	// is false runs without idempotency when the key is missing. Defaults
	// to nil: the key is optional on every method.
	Required func(fullMethod string) bool
	// Classify decides which status codes are stored (once.ClassFinal),
	// held (once.ClassHold) or never stored (once.ClassRetry). Defaults to
	// DefaultClassify.
	Classify func(code codes.Code) once.Class
	// MaxStoredResponse caps the response that is stored, in bytes of its
	// wire form. Defaults to DefaultMaxStoredResponse (1 MiB) when zero;
	// must not be negative. The interceptor sets the Keeper's outcome cap
	// for its calls to MaxStoredResponse plus 64 KiB for the type name,
	// the stored metadata and the framing, so a response within
	// MaxStoredResponse fits. A larger response is still returned to the
	// call that ran the handler, and the handler never runs again for the
	// key within the retention; every retry with the key is answered
	// Internal with an ErrorInfo of reason ReasonResponseUnavailable (the
	// call was processed, its response cannot be replayed). A final
	// status is capped the same way.
	MaxStoredResponse int
	// Options are applied to the scope of every call (once.Scope.With),
	// e.g. once.WithWait(2*time.Second) so that a duplicate waits for the
	// first call's response instead of getting Aborted. Defaults to none:
	// the Keeper's policy applies. The interceptor sets its own codec (the
	// reply's compact binary form, whatever the Keeper's codec), the
	// outcome cap (see MaxStoredResponse) and the default error
	// classifier after these, so those three cannot be overridden here.
	Options []once.Option
	// StoreMetadata lists the response header and trailer metadata keys
	// (grpc.SetHeader, grpc.SendHeader, grpc.SetTrailer) that are stored
	// with the reply and replayed: a replay carries them, with
	// "idempotent-replayed: true" added to its header. Keys are matched
	// case-insensitively. "grpc-" and ":" keys, "idempotency-key" and
	// "idempotent-replayed" are never stored, so ServerInterceptor refuses
	// them, an empty key and a key with a character gRPC does not allow
	// (other than letters, digits, '-', '_' and '.') with a *ConfigError
	// (Field "StoreMetadata"). Defaults to none: a replay
	// carries none of the metadata the handler set (the call that ran the
	// handler gets it all), so list what a client acts on, e.g. an order
	// id a handler sends in a header. Stored metadata counts toward the
	// 64 KiB beside MaxStoredResponse.
	StoreMetadata []string
	// OnError, when set, is told of failures that the client does not see
	// in full: an outcome the store did not record, a lease lost, or a
	// response too large to store (the handler's response is returned to
	// its caller anyway), a stored reply that cannot be decoded, a store
	// failure answered Unavailable, and any internal failure answered with
	// a generic Internal status. Defaults to nil.
	OnError func(ctx context.Context, fullMethod string, err error)
}

// ServerInterceptor returns the unary server interceptor that runs each
// keyed call at most once per (scope, key) on k, as the package
// documentation describes. It returns a *ConfigError (errors.Is
// ErrInvalidConfig) and no interceptor for a nil Keeper, a nil cfg.Scope
// (Field "Scope", wrapping ErrNoScope), a negative MaxStoredResponse, a
// StoreMetadata key that can never be stored (see StoreMetadata), or an
// option the core refuses in k's policy or cfg.Options (once.WithWait(-1),
// a non-positive lease or retention...: Field "Keeper" or "Options",
// wrapping the core's *once.InvalidInputError), with which every call
// would fail. These checks send nothing to the store.
func ServerInterceptor(k *once.Keeper, cfg Config) (grpc.UnaryServerInterceptor, error) {
	if k == nil {
		return nil, &ConfigError{Field: "Keeper", Reason: "nil"}
	}
	if cfg.Scope == nil {
		return nil, &ConfigError{Field: "Scope", Reason: "required: return the authenticated principal of the call", Err: ErrNoScope}
	}
	if cfg.MaxStoredResponse < 0 {
		return nil, &ConfigError{Field: "MaxStoredResponse", Reason: "negative"}
	}
	meta, err := storedKeys(cfg.StoreMetadata)
	if err != nil {
		return nil, err
	}
	if cfg.Classify == nil {
		cfg.Classify = DefaultClassify
	}
	if cfg.MaxStoredResponse == 0 {
		cfg.MaxStoredResponse = DefaultMaxStoredResponse
	}
	s := &server{k: k, cfg: cfg, meta: meta}
	s.opts = append(slices.Clone(cfg.Options),
		once.WithCodec(replyCodec{}),
		once.WithMaxOutcomeSize(min(cfg.MaxStoredResponse, math.MaxInt-metadataBudget)+metadataBudget),
		once.WithClassifier(nil),
	)
	if err := checkPolicy(k, s.opts); err != nil {
		return nil, err
	}
	return s.intercept, nil
}

// configProbe is a value the interceptor's codec refuses to encode (its
// JSON fails), so that checkPolicy's Resolve stops after validating the
// policy, before any store call.
type configProbe struct{}

var errConfigProbe = errors.New("oncegrpc: the policy check's value is never stored")

func (configProbe) MarshalJSON() ([]byte, error) { return nil, errConfigProbe }

// checkPolicy reports a Keeper policy, or Options on top of it, that the
// core refuses (a negative wait, a non-positive lease...), with which
// every call would fail. It validates as every call does, with a Resolve
// that ends at encoding its value: nothing is sent to the store, traced
// or observed.
func checkPolicy(k *once.Keeper, opts []once.Option) error {
	const name = "oncegrpc-config-check"
	check := func(s once.Scope) error {
		var invalid *once.InvalidInputError
		if err := once.Resolve(context.Background(), s, name, nil, configProbe{}, nil); errors.As(err, &invalid) {
			return invalid
		}
		return nil
	}
	if err := check(k.Scope(name).With(once.WithCodec(replyCodec{}))); err != nil {
		return &ConfigError{Field: "Keeper", Reason: "its options are invalid: " + err.Error(), Err: err}
	}
	if err := check(k.Scope(name).With(opts...)); err != nil {
		return &ConfigError{Field: "Options", Reason: err.Error(), Err: err}
	}
	return nil
}

type server struct {
	k    *once.Keeper
	cfg  Config
	opts []once.Option
	meta map[string]bool // Config.StoreMetadata
}

func (s *server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	key, present, err := keyFrom(ctx)
	if err != nil {
		return nil, err
	}
	if !present {
		if s.cfg.Required != nil && s.cfg.Required(info.FullMethod) {
			return nil, status.Error(codes.InvalidArgument, "oncegrpc: the "+KeyHeader+" metadata is required")
		}
		return handler(ctx, req)
	}
	if err := once.ValidateKey(key); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	fp, err := fingerprint(info.FullMethod, req)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	name, err := s.cfg.Scope(ctx, info.FullMethod)
	if err != nil {
		if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
			return nil, st.Err()
		}
		return nil, status.Error(codes.Unauthenticated, "oncegrpc: no scope for the call")
	}
	if name == "" {
		return nil, status.Error(codes.Unauthenticated, "oncegrpc: no scope for the call")
	}

	var ran bool
	var handlerResp any
	var handlerErr error
	out, err := once.DoOutcome(ctx, s.k.Scope(name).With(s.opts...), key, fp, func(ctx context.Context) (storedReply, error) {
		ran = true
		ctx, md := recordMetadata(ctx, s.meta)
		handlerResp, handlerErr = handler(ctx, req)
		var r storedReply
		var err error
		if handlerErr == nil {
			r, err = replyOf(handlerResp)
			r.Header, r.Trailer = md.recorded()
			return r, err
		}
		st, _ := status.FromError(handlerErr)
		switch s.cfg.Classify(st.Code()) {
		case once.ClassFinal:
			r, err = statusReply(st)
			r.Header, r.Trailer = md.recorded()
			return r, err
		case once.ClassHold:
			return storedReply{}, once.Hold(handlerErr)
		default:
			return storedReply{}, once.Retry(handlerErr)
		}
	})
	if ran {
		// The handler ran in this call: its caller gets the handler's
		// answer, whatever became of recording it (a store failure, a
		// lost lease, a response too large to store).
		if err != nil && !handlersOwn(out, err, handlerErr) {
			s.report(ctx, info.FullMethod, err)
		}
		return handlerResp, handlerErr
	}
	if out.Status == once.Replayed {
		header := out.Value.Header.Copy()
		if header == nil {
			header = metadata.MD{}
		}
		header.Set(ReplayedHeader, "true")
		_ = grpc.SetHeader(ctx, header)
		if len(out.Value.Trailer) > 0 {
			_ = grpc.SetTrailer(ctx, out.Value.Trailer)
		}
	}
	if err == nil {
		resp, statusErr, decodeErr := out.Value.answer()
		if decodeErr != nil {
			s.report(ctx, info.FullMethod, decodeErr)
			return nil, responseUnavailable()
		}
		return resp, statusErr
	}
	return nil, s.protocolError(ctx, info.FullMethod, err)
}

// handlersOwn reports whether err, returned by DoOutcome for a call that
// ran the handler, is the handler's own retryable or held error, returned
// as it was, rather than a failure to record the outcome.
func handlersOwn(out once.Outcome[storedReply], err, handlerErr error) bool {
	return handlerErr != nil && (out.Status == once.Released || out.Status == once.Held) && errors.Is(err, handlerErr)
}

// protocolError maps what once.DoOutcome returned, for a call that did
// not run the handler and has no stored reply, to a status. No internal
// error text reaches the client: what it does not need is told to OnError.
func (s *server) protocolError(ctx context.Context, method string, err error) error {
	var inProgress *once.InProgressError
	switch {
	case errors.As(err, &inProgress):
		return inProgressStatus(inProgress)
	case errors.Is(err, once.ErrKeyReused):
		return withInfo(status.New(codes.InvalidArgument, once.ErrKeyReused.Error()), ReasonKeyReused)
	case errors.As(err, new(*once.StoreError)):
		s.report(ctx, method, err)
		return status.Error(codes.Unavailable, "oncegrpc: idempotency store unavailable")
	case errors.As(err, new(*once.OutcomeTooLargeError)):
		return responseUnavailable()
	case errors.Is(err, once.ErrUndecodable):
		s.report(ctx, method, err)
		return responseUnavailable()
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "oncegrpc: the call was cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "oncegrpc: the call's deadline passed")
	default:
		// A scope name the core refuses (over 255 bytes, control
		// characters), a stored outcome that is not a gRPC reply, ...
		s.report(ctx, method, err)
		return status.Error(codes.Internal, "oncegrpc: internal error")
	}
}

func (s *server) report(ctx context.Context, method string, err error) {
	if s.cfg.OnError != nil {
		s.cfg.OnError(ctx, method, err)
	}
}

// ErrorDomain is the domain of the google.rpc.ErrorInfo details the
// server interceptor attaches to its own answers.
const ErrorDomain = "once.stagedoor"

// Reasons of the ErrorInfo details (domain ErrorDomain) of the server
// interceptor's own answers.
const (
	// ReasonInProgress (Aborted, with a RetryInfo): a call with the key
	// is running; retry after the delay.
	ReasonInProgress = "IDEMPOTENCY_KEY_IN_PROGRESS"
	// ReasonHeld (Aborted, with a RetryInfo): the outcome of the call
	// with the key is unknown (it ended with a held status, see
	// DefaultClassify) and the key is held until the RetryInfo delay has
	// passed, or until its outcome is resolved. The client interceptor
	// does not retry it.
	ReasonHeld = "IDEMPOTENCY_KEY_HELD"
	// ReasonKeyReused (InvalidArgument): the key was used with another
	// method or request.
	ReasonKeyReused = "IDEMPOTENCY_KEY_REUSED"
	// ReasonResponseUnavailable (Internal): the call with the key was
	// processed, but its reply cannot be replayed: it was too large to
	// store (Config.MaxStoredResponse) or can no longer be decoded.
	ReasonResponseUnavailable = "IDEMPOTENT_RESPONSE_UNAVAILABLE"
)

// inProgressStatus is Aborted with a RetryInfo and an ErrorInfo detail.
func inProgressStatus(e *once.InProgressError) error {
	reason, msg := ReasonInProgress, once.ErrInProgress.Error()
	if e.Held {
		reason, msg = ReasonHeld, "oncegrpc: the outcome of the call with this key is unknown; the key is held"
	}
	st := status.New(codes.Aborted, msg)
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(e.RetryAfter)}); err == nil {
		st = d
	}
	return withInfo(st, reason)
}

func responseUnavailable() error {
	return withInfo(status.New(codes.Internal, "oncegrpc: the call with this key was processed, but its response cannot be replayed"), ReasonResponseUnavailable)
}

// withInfo adds an ErrorInfo of reason to st.
func withInfo(st *status.Status, reason string) error {
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}); err == nil {
		st = d
	}
	return st.Err()
}

// keyFrom reads the key from the incoming metadata: present is false when
// there is none; two values are an error.
func keyFrom(ctx context.Context) (key string, present bool, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get(KeyHeader)
	switch len(values) {
	case 0:
		return "", false, nil
	case 1:
		return values[0], true, nil
	default:
		return "", true, status.Error(codes.InvalidArgument, "oncegrpc: more than one "+KeyHeader)
	}
}

// fingerprint digests the full method name and the deterministic
// marshalling of the request.
func fingerprint(method string, req any) (once.Fingerprint, error) {
	m, ok := req.(proto.Message)
	if !ok {
		return nil, errors.New("oncegrpc: the request is not a protobuf message")
	}
	data, err := deterministic.Marshal(m)
	if err != nil {
		return nil, errors.New("oncegrpc: the request cannot be marshalled")
	}
	return hashers.Parts([]byte(method), data), nil
}

package grpconce

import (
	"context"
	"errors"
	"time"

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
// default, because keys must never be shared between callers.
var ErrNoScope = errors.New("grpconce: Config.Scope is required")

// Config configures ServerInterceptor.
type Config struct {
	// Scope returns the scope of a call: the authenticated principal, so
	// that callers never see each other's keys. An error answers the call
	// with its status if it has one, Unauthenticated otherwise. Required.
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
	// OnError, when set, is told of failures that the client does not see
	// in full: an outcome the store did not record (the handler's response
	// is returned anyway) and stored outcomes that cannot be decoded.
	// Defaults to nil.
	OnError func(ctx context.Context, fullMethod string, err error)
}

// ServerInterceptor returns the unary server interceptor that runs each
// keyed call at most once per (scope, key) on k, as the package
// documentation describes. It returns ErrNoScope without cfg.Scope.
func ServerInterceptor(k *once.Keeper, cfg Config) (grpc.UnaryServerInterceptor, error) {
	if k == nil {
		return nil, errors.New("grpconce: nil Keeper")
	}
	if cfg.Scope == nil {
		return nil, ErrNoScope
	}
	if cfg.Classify == nil {
		cfg.Classify = DefaultClassify
	}
	s := &server{k: k, cfg: cfg}
	return s.intercept, nil
}

type server struct {
	k   *once.Keeper
	cfg Config
}

func (s *server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	key, present, err := keyFrom(ctx)
	if err != nil {
		return nil, err
	}
	if !present {
		if s.cfg.Required != nil && s.cfg.Required(info.FullMethod) {
			return nil, status.Error(codes.InvalidArgument, "grpconce: the "+KeyHeader+" metadata is required")
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
		return nil, status.Error(codes.Unauthenticated, "grpconce: no scope for the call")
	}

	var handlerResp any
	var handlerErr error
	out, err := once.DoOutcome(ctx, s.k.Scope(name), key, fp, func(ctx context.Context) (storedReply, error) {
		handlerResp, handlerErr = handler(ctx, req)
		if handlerErr == nil {
			return replyOf(handlerResp)
		}
		st, _ := status.FromError(handlerErr)
		switch s.cfg.Classify(st.Code()) {
		case once.ClassFinal:
			return statusReply(st)
		case once.ClassHold:
			return storedReply{}, once.Hold(handlerErr)
		default:
			return storedReply{}, once.Retry(handlerErr)
		}
	})
	if out.Replayed {
		_ = grpc.SetHeader(ctx, metadata.Pairs(ReplayedHeader, "true"))
	}
	switch {
	case err == nil && out.Replayed:
		resp, statusErr, decodeErr := out.Value.answer()
		if decodeErr != nil {
			s.report(ctx, info.FullMethod, decodeErr)
			return nil, status.Error(codes.Internal, "grpconce: the stored response cannot be decoded")
		}
		return resp, statusErr
	case err == nil:
		if out.Value.Status != nil {
			return nil, handlerErr
		}
		return handlerResp, nil
	case errors.Is(err, once.ErrOutcomeUnrecorded):
		s.report(ctx, info.FullMethod, err)
		return handlerResp, handlerErr
	}
	return nil, s.protocolError(ctx, info.FullMethod, err, handlerErr)
}

// protocolError maps what once.DoOutcome returned, other than an answer,
// to a status.
func (s *server) protocolError(ctx context.Context, method string, err, handlerErr error) error {
	var inProgress *once.InProgressError
	switch {
	case handlerErr != nil && errors.Is(err, handlerErr):
		return handlerErr // retryable or held: never stored, returned as is
	case errors.As(err, &inProgress):
		return inProgressStatus(inProgress.RetryAfter)
	case errors.Is(err, once.ErrKeyReused):
		return status.Error(codes.InvalidArgument, once.ErrKeyReused.Error())
	case errors.Is(err, once.ErrInvalidInput):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, once.ErrLeaseLost):
		return status.Error(codes.Aborted, once.ErrLeaseLost.Error())
	case errors.Is(err, once.ErrStore):
		return status.Error(codes.Unavailable, "grpconce: idempotency store unavailable")
	case errors.Is(err, once.ErrOutcomeTooLarge):
		return status.Error(codes.Internal, "grpconce: the response is too large to store")
	case errors.Is(err, once.ErrUndecodable):
		s.report(ctx, method, err)
		return status.Error(codes.Internal, "grpconce: the stored response cannot be decoded")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	default:
		s.report(ctx, method, err)
		return status.Error(codes.Internal, "grpconce: "+err.Error())
	}
}

func (s *server) report(ctx context.Context, method string, err error) {
	if s.cfg.OnError != nil {
		s.cfg.OnError(ctx, method, err)
	}
}

// inProgressStatus is Aborted with a RetryInfo detail.
func inProgressStatus(retryAfter time.Duration) error {
	st := status.New(codes.Aborted, once.ErrInProgress.Error())
	if withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)}); err == nil {
		st = withInfo
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
		return "", true, status.Error(codes.InvalidArgument, "grpconce: more than one "+KeyHeader)
	}
}

// fingerprint digests the full method name and the deterministic
// marshalling of the request.
func fingerprint(method string, req any) (once.Fingerprint, error) {
	m, ok := req.(proto.Message)
	if !ok {
		return nil, errors.New("grpconce: the request is not a protobuf message")
	}
	data, err := deterministic.Marshal(m)
	if err != nil {
		return nil, errors.New("grpconce: the request cannot be marshalled")
	}
	return hashers.Parts([]byte(method), data), nil
}

package grpconce

import (
	"google.golang.org/grpc/codes"

	"github.com/stagedoor/once"
)

// DefaultClassify is the default Config.Classify. Codes that answer the
// request are final (stored and replayed); transient codes and codes that
// depend on the caller's credentials or the server's deploy are
// retryable (never stored).
func DefaultClassify(code codes.Code) once.Class {
	switch code {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
		codes.FailedPrecondition, codes.OutOfRange:
		return once.ClassFinal
	default:
		return once.ClassRetry
	}
}

package oncegrpc

import (
	"google.golang.org/grpc/codes"

	"github.com/stagedoor/once"
)

// DefaultClassify is the default Config.Classify. It follows oncehttp's
// defaults (DefaultStoreStatus; 5xx held) where gRPC's codes mean the same,
// and gRPC's own promise where they differ (Unavailable and Aborted mean
// the call did nothing and may be retried):
//
//	code                class     why                                     oncehttp's default
//	NotFound            stored    an answer to the intent                 404 stored
//	AlreadyExists       stored    an answer to the intent                 409 stored
//	PermissionDenied    stored    an answer to the intent                 403 stored
//	FailedPrecondition  stored    an answer (a decline, a conflict)       402, 409 stored
//	InvalidArgument     released  validation: the corrected request       400, 422 released
//	OutOfRange          released    runs with the same key                400 released
//	ResourceExhausted   released  transient: the same request             429 released
//	Unavailable         released    succeeds later; nothing was done      503 released
//	Aborted             released    (gRPC: retry at a higher level)       409 stored
//	Canceled            released  the caller gave up (retryable in once)  -
//	Unauthenticated     released  depends on the caller's credentials     401 stored
//	Unimplemented       released  depends on the server's deploy          501 (held)
//	DeadlineExceeded    held      outcome unknown: it may have happened   504 held
//	Unknown, Internal   held      outcome unknown                         500 held
//	DataLoss            held      outcome unknown                         500 held
//	any other code      held      treated as Unknown                      -
//
// Stored (once.ClassFinal): replayed to every retry with the key. Released
// (once.ClassRetry): never stored; the key is freed at once, so the next
// call with it runs the handler again. Held (once.ClassHold): never
// stored; the key is held for the Keeper's hold period (once.WithHoldFor,
// one lease by default), during which a retry is answered Aborted with a
// RetryInfo and an ErrorInfo of reason ReasonHeld, and afterwards runs the
// handler again. (There is no gRPC resolution helper yet: a verdict of
// once.Resolve or a Reconciler is stored in the Keeper's codec, which the
// interceptor cannot replay, so retries would get Internal with
// ReasonResponseUnavailable; do not combine it with
// once.HoldUntilResolved.) A handler that knows a
// failure did nothing (a validation before any effect, an unreachable
// dependency) should say so with a released code; one that cannot know
// returns Internal, Unknown or DeadlineExceeded and its key is held.
func DefaultClassify(code codes.Code) once.Class {
	switch code {
	case codes.NotFound, codes.AlreadyExists, codes.PermissionDenied, codes.FailedPrecondition:
		return once.ClassFinal
	case codes.InvalidArgument, codes.OutOfRange, codes.ResourceExhausted, codes.Unavailable,
		codes.Aborted, codes.Canceled, codes.Unauthenticated, codes.Unimplemented:
		return once.ClassRetry
	default:
		return once.ClassHold
	}
}

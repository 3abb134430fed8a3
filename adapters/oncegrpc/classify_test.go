package oncegrpc_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncegrpc"
)

// TestDefaultClassify pins the table of DefaultClassify's documentation.
func TestDefaultClassify(t *testing.T) {
	want := map[codes.Code]once.Class{
		codes.NotFound: once.ClassFinal, codes.AlreadyExists: once.ClassFinal,
		codes.PermissionDenied: once.ClassFinal, codes.FailedPrecondition: once.ClassFinal,
		codes.InvalidArgument: once.ClassRetry, codes.OutOfRange: once.ClassRetry,
		codes.ResourceExhausted: once.ClassRetry, codes.Unavailable: once.ClassRetry,
		codes.Aborted: once.ClassRetry, codes.Canceled: once.ClassRetry,
		codes.Unauthenticated: once.ClassRetry, codes.Unimplemented: once.ClassRetry,
		codes.DeadlineExceeded: once.ClassHold, codes.Unknown: once.ClassHold,
		codes.Internal: once.ClassHold, codes.DataLoss: once.ClassHold,
		codes.Code(42): once.ClassHold,
	}
	for code, class := range want {
		require.Equal(t, class, oncegrpc.DefaultClassify(code), "%v", code)
	}
}

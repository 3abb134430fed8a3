package oncegrpc

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestReplyCodec: a reply round-trips in a form about the size of the
// message's wire bytes, and no truncation or corruption of it panics.
func TestReplyCodec(t *testing.T) {
	msg, err := replyOf(wrapperspb.String(strings.Repeat("r", 1000)))
	require.NoError(t, err)
	msg.Header = metadata.Pairs("x-order-id", "42", "x-b-bin", "\x00\xff")
	msg.Trailer = metadata.Pairs("x-charge-id", "ch_1")
	st, err := statusReply(status.New(codes.FailedPrecondition, "insufficient funds"))
	require.NoError(t, err)
	for _, r := range []storedReply{msg, st} {
		data, err := replyCodec{}.Marshal(r)
		require.NoError(t, err)
		require.Less(t, len(data), len(r.Message)+len(r.Status)+128, "no base64")
		var back storedReply
		require.NoError(t, replyCodec{}.Unmarshal(data, &back))
		require.Equal(t, r.Type, back.Type)
		require.Equal(t, r.Status != nil, back.Status != nil)
		require.Equal(t, string(r.Message)+string(r.Status), string(back.Message)+string(back.Status))
		require.Equal(t, r.Header, back.Header)
		require.Equal(t, r.Trailer, back.Trailer)
		for i := range data {
			_ = replyCodec{}.Unmarshal(data[:i], &back)
			corrupt := append([]byte(nil), data...)
			corrupt[i] ^= 0xff
			_ = replyCodec{}.Unmarshal(corrupt, &back)
		}
	}
	resp, statusErr, decodeErr := msg.answer()
	require.NoError(t, decodeErr)
	require.NoError(t, statusErr)
	require.True(t, proto.Equal(wrapperspb.String(strings.Repeat("r", 1000)), resp.(proto.Message)))
	_, statusErr, decodeErr = st.answer()
	require.NoError(t, decodeErr)
	require.Equal(t, codes.FailedPrecondition, status.Code(statusErr))

	data, err := replyCodec{}.Marshal("a step's value") // any other value is JSON
	require.NoError(t, err)
	var step string
	require.NoError(t, replyCodec{}.Unmarshal(data, &step))
	require.Equal(t, "a step's value", step)
	require.Error(t, replyCodec{}.Unmarshal([]byte(`{"type":"x"}`), &storedReply{}), "the old JSON form is not a reply")
}

package oncegrpc

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"
)

// TestReplyCodecGolden pins replyCodec's exact encoding: replies stored by
// an earlier build must keep decoding, and one reply always encodes to
// the same bytes (metadata keys sorted).
func TestReplyCodecGolden(t *testing.T) {
	for _, c := range []struct {
		in   storedReply
		want string
	}{{
		in: storedReply{Type: "t.M", Message: []byte("\x0a\x01x"),
			Header:  metadata.MD{"b": {"2", "3"}, "a": {"1"}},
			Trailer: metadata.MD{"c": {"4"}}},
		want: "\x01\x01\x03t.M" +
			"\x02\x01a\x01\x011\x01b\x02\x012\x013" +
			"\x01\x01c\x01\x014" +
			"\x0a\x01x",
	}, {
		in:   storedReply{Status: []byte("\x08\x09")},
		want: "\x01\x02\x00\x00\x00\x08\x09",
	}} {
		data, err := replyCodec{}.Marshal(c.in)
		require.NoError(t, err)
		require.Equal(t, c.want, string(data))
		var out storedReply
		require.NoError(t, replyCodec{}.Unmarshal([]byte(c.want), &out))
		require.Equal(t, c.in, out)
	}
	var out storedReply
	for _, junk := range []string{"", "\x01", "\x02\x01\x00\x00\x00", "\x01\x03\x00\x00\x00", "\x01\x01\x05t", "\x01\x01\x00\x05", "\x01\x01\x00\x01\x01a\x09\x01b", "\x01\x01\x00\x00"} {
		require.ErrorIs(t, replyCodec{}.Unmarshal([]byte(junk), &out), errNotReply, "%q", junk)
	}
}

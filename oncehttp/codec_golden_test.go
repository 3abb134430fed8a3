package oncehttp

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResponseCodecGolden pins responseCodec's exact encoding: stored
// responses written by an earlier build must keep decoding, and a new
// build must keep writing what an older one can read.
func TestResponseCodecGolden(t *testing.T) {
	for _, c := range []struct {
		in   storedResponse
		want string
	}{{
		in: storedResponse{Format: storedFormat, Status: 201,
			Header:   http.Header{"Location": {"/a"}},
			Trailer:  http.Header{"X-T": {"1", "2"}},
			TooLarge: true, Body: []byte("hi")},
		want: "\x02\xc9\x01\x01" +
			"\x01\x08Location\x01\x02/a" +
			"\x01\x03X-T\x02\x011\x012" +
			"hi",
	}, {
		// Names are written sorted, so one response has one encoding.
		in: storedResponse{Format: storedFormat, Status: 200,
			Header: http.Header{"Link": {"<b>"}, "Etag": {`"1"`}, "Location": {"/c"}}},
		want: "\x02\xc8\x01\x00" +
			"\x03\x04Etag\x01\x03\"1\"\x04Link\x01\x03<b>\x08Location\x01\x02/c" +
			"\x00",
	}, {
		in:   storedResponse{Format: storedFormat, Status: 204},
		want: "\x02\xcc\x01\x00\x00\x00",
	}} {
		data, err := responseCodec{}.Marshal(c.in)
		require.NoError(t, err)
		require.Equal(t, c.want, string(data))
		var out storedResponse
		require.NoError(t, responseCodec{}.Unmarshal([]byte(c.want), &out))
		require.Equal(t, c.in, out)
	}
	var out storedResponse
	for _, junk := range []string{"", "\x02", "\x01\xc8\x01\x00\x01\x01A\x01\x01bbody" /* format 1 never shipped */, "\x02\xc9", "\x02\xc9\x01\x00\x05", "\x02\xc9\x01\x00\x01\x08Loc", "\x02\xc9\x01\x00\x01\x01A\x09\x01b"} {
		require.ErrorIs(t, responseCodec{}.Unmarshal([]byte(junk), &out), errNotResponse, "%q", junk)
	}
}

package oncehttp

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzStoredResponse feeds arbitrary stored bytes to the stored-response
// parser: it never panics, refuses what it cannot read with errNotResponse,
// and what it accepts re-encodes to bytes that decode to the same
// response, which replays without panicking.
func FuzzStoredResponse(f *testing.F) {
	seeds := []storedResponse{
		{Format: storedFormat, Status: 201, Header: http.Header{"Location": {"/orders/1"}, "Link": {"<a>", "<b>"}}, Body: []byte("\x00body")},
		{Format: storedFormat, Status: 200, TooLarge: true, Header: http.Header{"Location": {"/x"}}},
		{Format: storedFormat, Status: 204, Trailer: http.Header{"X-Checksum": {"c0ffee"}}},
		{Format: storedFormat, Status: 402},
	}
	for _, s := range seeds {
		data, err := responseCodec{}.Marshal(s)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte{2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var s storedResponse
		if err := (responseCodec{}).Unmarshal(data, &s); err != nil {
			require.ErrorIs(t, err, errNotResponse)
			return
		}
		require.Equal(t, storedFormat, s.Format)
		require.LessOrEqual(t, s.Status, 999)
		again, err := responseCodec{}.Marshal(s)
		require.NoError(t, err)
		var s2 storedResponse
		require.NoError(t, responseCodec{}.Unmarshal(again, &s2))
		require.Equal(t, s, s2)

		// A decoded response replays (or is refused) without panicking.
		if s.Status >= 200 && !s.TooLarge {
			w := &discardWriter{h: http.Header{}}
			s.replay(w, http.MethodPost)
		}
	})
}

// discardWriter is a ResponseWriter that keeps nothing but headers.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

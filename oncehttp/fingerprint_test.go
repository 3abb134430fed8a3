package oncehttp

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/hashers"
)

// TestBodyFingerprintIsRawBytes is what the documentation says of the
// request fingerprint: the default is over the body's raw bytes, so a
// retry whose JSON body was re-serialised is another request (422); with
// Config.Fingerprint set to a RequestHasher with the JSON body hasher, it
// is the same request, answered with the stored response.
func TestBodyFingerprintIsRawBytes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fingerprint func(*http.Request) (once.Fingerprint, error)
		retry       int
	}{
		{"default: raw bytes", nil, http.StatusUnprocessableEntity},
		{"hashers.JSON", hashers.RequestHasher{Body: hashers.JSON}.Hash, http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := statusServer(t, once.New(nil), Config{Fingerprint: tc.fingerprint})
			key := newKey(t)
			require.Equal(t, http.StatusCreated, send(t, srv.Client(), srv, "/status/201", key, `{"sku":"a","qty":2}`).status)
			retry := send(t, srv.Client(), srv, "/status/201", key, `{ "qty": 2, "sku": "a" }`)
			require.Equal(t, tc.retry, retry.status)
			if tc.retry == http.StatusCreated {
				require.Equal(t, "true", retry.header.Get(ReplayedHeader))
				require.Equal(t, "run 1", retry.body)
			}
		})
	}
}

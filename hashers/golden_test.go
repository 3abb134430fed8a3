package hashers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGolden pins digests: they are stored with their keys, so a change in
// any format must be deliberate (a new domain tag version), never an
// accident of refactoring.
func TestGolden(t *testing.T) {
	doc := `{"hold_ids": [88211, 88212], "payment_method": "pm_4Yc\u2026", "amount": 12.50}`

	j, err := JSON([]byte(doc))
	require.NoError(t, err)
	f, err := Fields([]byte(doc), "amount", "payment_method")
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, "/orders?x=1", strings.NewReader(doc))
	raw, err := RequestHasher{Query: QueryRaw}.Hash(r)
	require.NoError(t, err)
	r = httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(doc))
	canon, err := RequestHasher{Body: JSON}.Hash(r)
	require.NoError(t, err)

	assert.Equal(t, "44e5ce60f27d1c581e2340366cd71ef8a276708c68b9e17b101904e97b7e4efd", hexString(j), "JSON")
	assert.Equal(t, "26b64a6de574c95faa98b50d243a49e8bff3e2a296025968562c72fe058ffe78", hexString(f), "Fields")
	assert.Equal(t, "70cfc8bb4733ab963bb900cdc51a01e3e2fb01d49ad7e698e697d39c3aeecc83", hexString(raw), "Request raw")
	assert.Equal(t, "83387401943bd4f23f0780a17feddaec6eb10026b482e03544ba04a8ff4a9cbb", hexString(canon), "Request JSON")
}

func TestCanonicalForm(t *testing.T) {
	cases := map[string]string{
		` {"b": [1.50, true, null, -0.0], "a": "\u0078"} `: "ok\x01as\x01xk\x01bad\x051.5E0tnd\x010ee",
		`-12300`:                 "d\x07-1.23E4",
		`0.000120`:               "d\x061.2E-4",
		`1e99999999999999999999`: "d\x161E99999999999999999999",
		`{}`:                     "oe",
		`[]`:                     "ae",
	}
	for doc, want := range cases {
		c := getCanon([]byte(doc))
		require.NoError(t, c.document(), doc)
		assert.Equal(t, want, string(c.out), doc)
		putCanon(c)
	}
}

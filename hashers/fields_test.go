package hashers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustFields(t *testing.T, doc string, paths ...string) []byte {
	t.Helper()
	fp, err := Fields([]byte(doc), paths...)
	require.NoError(t, err, doc)
	require.Len(t, fp, Size)
	return fp
}

func TestFieldsOnlyListedMatter(t *testing.T) {
	paths := []string{"amount", "customer.id"}
	want := mustFields(t, `{"amount":150,"currency":"EUR","customer":{"id":"c_1","name":"Ada"},"trace":"t1"}`, paths...)

	same := []string{
		`{"trace":"t2","customer":{"name":"Bob","id":"c_1"},"amount":1.5e2}`,
		`{"amount":150,"customer":{"id":"c_1"}}`,
		`{"customer":{"id":"\u0063_1","extra":[1,2,{"z":null}]},"amount":150.0,"other":{}}`,
	}
	for _, doc := range same {
		assert.Equal(t, want, mustFields(t, doc, paths...), doc)
	}
	assert.Equal(t, want, mustFields(t, same[0], "customer.id", "amount"), "path order does not matter")
	assert.Equal(t, want, mustFields(t, same[0], "customer.id", "amount", "amount"), "repeats do not matter")

	differ := []string{
		`{"amount":151,"customer":{"id":"c_1"}}`,
		`{"amount":150,"customer":{"id":"c_2"}}`,
		`{"amount":"150","customer":{"id":"c_1"}}`,
		`{"amount":150}`,
		`{"amount":150,"customer":{"id":null}}`,
		`{"amount":150,"customer":"c_1"}`,
		`{"amount":150,"customer.id":"c_1"}`,
		`{"customer":{"id":"c_1"}}`,
	}
	for _, doc := range differ {
		assert.NotEqual(t, want, mustFields(t, doc, paths...), doc)
	}
}

func TestFieldsMissingVersusNull(t *testing.T) {
	missing := mustFields(t, `{"b":1}`, "a")
	null := mustFields(t, `{"a":null,"b":1}`, "a")
	assert.NotEqual(t, missing, null)

	// Every way of being missing is the same.
	assert.Equal(t, missing, mustFields(t, `{}`, "a"))
	deepMissing := mustFields(t, `{}`, "a.b")
	for _, doc := range []string{`{"a":null}`, `{"a":1}`, `{"a":[{"b":1}]}`, `{"a":{}}`, `{"a":{"c":1}}`} {
		assert.Equal(t, deepMissing, mustFields(t, doc, "a.b"), doc)
	}
	assert.NotEqual(t, deepMissing, mustFields(t, `{"a":{"b":null}}`, "a.b"))
}

func TestFieldsPathNamesAreHashed(t *testing.T) {
	assert.NotEqual(t, mustFields(t, `{"a":1,"b":1}`, "a"), mustFields(t, `{"a":1,"b":1}`, "b"))
	assert.NotEqual(t, mustFields(t, `{"a":1,"b":2}`, "a", "b"), mustFields(t, `{"a":2,"b":1}`, "a", "b"))
	assert.NotEqual(t, mustFields(t, `{"a":1}`, "a"), mustFields(t, `{"a":1}`, "a", "b"))
	// Fields and JSON live in different domains.
	fp, err := JSON([]byte(`1`))
	require.NoError(t, err)
	assert.NotEqual(t, fp, mustFields(t, `{"a":1}`, "a"))
}

// TestFieldsDottedKey: a dot always separates keys, so a member whose key
// contains one is never selected; its path hashes as missing.
func TestFieldsDottedKey(t *testing.T) {
	missing := mustFields(t, `{}`, "a.b")
	assert.Equal(t, missing, mustFields(t, `{"a.b":1}`, "a.b"))
	assert.Equal(t, missing, mustFields(t, `{"a.b":2}`, "a.b"))
	assert.NotEqual(t, missing, mustFields(t, `{"a":{"b":1}}`, "a.b"))
}

func TestFieldsDoesNotModifyPaths(t *testing.T) {
	paths := []string{"b", "a", "b"}
	mustFields(t, `{"a":1,"b":2}`, paths...)
	assert.Equal(t, []string{"b", "a", "b"}, paths)
}

func TestFieldsErrors(t *testing.T) {
	for _, paths := range [][]string{nil, {""}, {"a", ".b"}, {"a."}, {"a..b"}, {"\xff"}, {"a", "b.\xc3"}} {
		_, err := Fields([]byte(`{"a":1}`), paths...)
		assert.ErrorIs(t, err, ErrInvalidPath, "%q", paths)
	}
	for _, doc := range []string{`[1]`, `1`, `"a"`, `null`, `{"a":1,"a":2}`, `{"a":1} x`, `{"x":{"y":1,"y":1}}`} {
		_, err := Fields([]byte(doc), "a")
		assert.ErrorIs(t, err, ErrInvalidJSON, doc)
	}
}

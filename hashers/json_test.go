package hashers

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustJSON(t *testing.T, doc string) []byte {
	t.Helper()
	fp, err := JSON([]byte(doc))
	require.NoError(t, err, doc)
	require.Len(t, fp, Size)
	return fp
}

func TestJSONEqual(t *testing.T) {
	groups := [][]string{
		{`1`, `1.0`, `1e0`, `1E+0`, `10e-1`, `0.1e1`, `1.000e0`, `100E-2`, `0.00001e5`},
		{`0`, `-0`, `0.0`, `0e10`, `-0.000E-7`},
		{`-12.5`, `-125e-1`, `-0.125E2`},
		{`1e400`, `10e399`, `0.1e401`},
		{`"A"`, `"\u0041"`},
		{`"é"`, `"\u00e9"`, `"\u00E9"`},
		{`"😀"`, `"\ud83d\ude00"`},
		{`"a/b"`, `"a\/b"`},
		{`"\n\"\\"`, `"\u000a\u0022\u005c"`},
		{`{"a":1,"b":[true,false,null]}`, "{ \"b\" : [ true , false , null ] ,\n\t\"a\" : 1.0 }\r\n"},
		{`{"a":{"x":1,"y":2},"b":2}`, `{"b":2,"a":{"y":2,"x":1}}`},
		{`{"\u0061":1}`, `{"a":1}`},
		{`[]`, ` [ ] `},
		{`{}`, ` { } `},
	}
	for _, g := range groups {
		want := mustJSON(t, g[0])
		for _, doc := range g[1:] {
			assert.Equal(t, want, mustJSON(t, doc), "%s vs %s", g[0], doc)
		}
	}
}

func TestJSONDistinct(t *testing.T) {
	docs := []string{
		`0.1`, `0.10000000000000001`, // equal as float64, different values
		`9007199254740992`, `9007199254740993`, // 2^53, 2^53+1
		`18446744073709551616`, `18446744073709551617`,
		`1e400`, `1e401`, `-1e400`, `1e-400`,
		`1e999999999999999999999`, `1e999999999999999999998`,
		`123456789012345678901234567890.123456789`, `123456789012345678901234567890.12345678`,
		`1`, `-1`, `10`, `11`, `0`,
		`"1"`, `true`, `false`, `null`, `"null"`, `""`,
		`[]`, `{}`, `[[]]`, `[{}]`, `[null]`, `[1,2]`, `[2,1]`, `[[1],2]`, `[1,[2]]`,
		`{"a":1}`, `{"a":"1"}`, `{"b":1}`, `{"a":1,"b":1}`, `{"a":{}}`, `{"a":[]}`, `{"a":null}`,
		`{"ab":"c"}`, `{"a":"bc"}`, `["ab","c"]`, `["a","bc"]`, `["abc"]`,
		`{"a":{"b":1}}`, `{"a":{"b":1},"c":1}`, `{"a":{"b":1,"c":1}}`,
		`"a\u0000"`, `"a"`, `"A"`, `"é"`, `"e\u0301"`, // no Unicode normalisation
	}
	seen := map[string]string{}
	for _, d := range docs {
		fp := string(mustJSON(t, d))
		if prev, ok := seen[fp]; ok {
			t.Errorf("JSON(%s) == JSON(%s)", d, prev)
		}
		seen[fp] = d
	}
}

func TestJSONInvalid(t *testing.T) {
	cases := map[string]string{
		"empty":                ``,
		"space":                `  `,
		"trailing data":        `{} {}`,
		"trailing value":       `1 2`,
		"trailing garbage":     `{}x`,
		"duplicate key":        `{"a":1,"b":2,"a":1}`,
		"duplicate nested":     `[{"x":{"k":1,"k":2}}]`,
		"duplicate by escape":  `{"a":1,"\u0061":2}`,
		"lone high surrogate":  `"\ud83d"`,
		"lone low surrogate":   `"\ude00"`,
		"reversed surrogates":  `"\ude00\ud83d"`,
		"surrogate then char":  `"\ud83dx"`,
		"invalid UTF-8":        "\"\xff\"",
		"invalid UTF-8 key":    "{\"\xc3\":1}",
		"leading zero":         `01`,
		"leading zero nested":  `[01]`,
		"plus":                 `+1`,
		"dot":                  `1.`,
		"dot first":            `.5`,
		"exp no digits":        `1e`,
		"exp sign only":        `1e+`,
		"minus only":           `-`,
		"NaN":                  `NaN`,
		"Infinity":             `-Infinity`,
		"hex":                  `0x10`,
		"single quotes":        `'a'`,
		"control char":         "\"a\tb\"",
		"bad escape":           `"\x"`,
		"short unicode":        `"\u12"`,
		"unterminated string":  `"abc`,
		"unterminated array":   `[1,2`,
		"unterminated object":  `{"a":1`,
		"trailing comma":       `[1,]`,
		"trailing comma obj":   `{"a":1,}`,
		"missing colon":        `{"a" 1}`,
		"non-string key":       `{1:1}`,
		"bad literal":          `tru`,
		"literal prefix":       `nulll`,
		"BOM":                  "\ufeff{}",
		"too deep":             strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
		"comment":              `{} // x`,
		"unescaped quote in s": `"a"b"`,
	}
	for name, doc := range cases {
		fp, err := JSON([]byte(doc))
		assert.ErrorIs(t, err, ErrInvalidJSON, name)
		assert.Nil(t, fp, name)
		var je *JSONError
		if assert.ErrorAs(t, err, &je, name) {
			assert.GreaterOrEqual(t, je.Offset, int64(0))
			assert.LessOrEqual(t, je.Offset, int64(len(doc)))
			assert.NotEmpty(t, je.Reason)
		}
	}

	_, err := JSON([]byte(`{"secret-key":1,"secret-key":2}`))
	assert.NotContains(t, err.Error(), "secret", "errors do not echo the document")

	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	mustJSON(t, deep)
}

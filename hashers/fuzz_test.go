package hashers

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzJSON checks that JSON never panics, rejects every document
// encoding/json rejects, rejects a document encoding/json accepts only for
// a documented I-JSON reason, and gives a valid document the same digest
// as its compacted, indented and re-encoded forms.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"hold_ids": [88211, 88212], "payment_method": "pm_4Yc…"}`,
		`{"a":1,"b":[true,false,null],"c":{"d":"\u00e9\ud83d\ude00\n"}}`,
		`[1, 1.0, 1e0, -0, 0.1, 0.10000000000000001, 1e400, 9007199254740993]`,
		`"\ud83d"`, `{"a":1,"a":2}`, "\"\xff\"", `[01]`, `1 2`, ``, `{`,
		`  {"z" : {"y":[{}, [], ""]}, "a": 1E-7}  `,
		`123456789012345678901234567890e-99999999999999999999999`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fp, err := JSON(data)
		if !json.Valid(data) {
			require.Error(t, err, "accepted invalid JSON %q", data)
			return
		}
		if err != nil {
			var je *JSONError
			require.True(t, errors.As(err, &je))
			switch je.Reason {
			case "duplicate object key", "unpaired surrogate escape", "invalid UTF-8", "nesting too deep":
				return // I-JSON restrictions, and MaxDepth, that encoding/json does not apply
			}
			t.Fatalf("rejected valid JSON %q: %v", data, err)
		}
		require.Len(t, fp, Size)

		var compact, indented bytes.Buffer
		require.NoError(t, json.Compact(&compact, data))
		require.NoError(t, json.Indent(&indented, data, " ", "\t"))
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v))
		reencoded, err := json.Marshal(v) // sorted keys, re-escaped strings
		require.NoError(t, err)

		for _, alt := range [][]byte{compact.Bytes(), indented.Bytes(), reencoded} {
			got, err := JSON(alt)
			require.NoError(t, err, "%q", alt)
			require.Equal(t, fp, got, "%q vs %q", data, alt)
		}
	})
}

package once

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type exactLine struct {
	SKU   string  `json:"sku"`
	Qty   uint16  `json:"qty,omitempty"`
	Price float64 `json:"price"`
	Gift  bool    `json:",omitempty"`
	Dash  int8    `json:"dash-1"`
}

type exactOrder struct {
	ID     int64
	Status string `json:"status,omitempty"`
	Lines  [2]exactLine
	Ratio  float32
}

type textName string

func (n textName) MarshalText() ([]byte, error) { return []byte("x" + n), nil }

type jsonAmount int

func (a *jsonAmount) UnmarshalJSON(b []byte) error { *a = 1; return nil }

// jsonExact accepts the types whose JSON round trip is exact, and refuses
// every kind of part json drops, merges, renames or rebuilds.
func TestJSONExactTypes(t *testing.T) {
	exact := []any{
		true, int8(0), uint64(0), 0.0, float32(0), "", [3]int{}, exactLine{}, exactOrder{}, struct{}{},
		struct {
			A int `json:"a"`
			B int `json:"b"`
		}{},
	}
	for _, v := range exact {
		assert.True(t, jsonExact(reflect.TypeOf(v)), "%T", v)
	}
	inexact := []any{
		&exactLine{}, []int{}, map[string]int{}, new(any), json.Number(""), time.Time{},
		textName(""), jsonAmount(0), [1]textName{}, uintptr(0), complex(1, 0),
		struct{ hidden int }{},
		struct{ exactLine }{},
		struct {
			A int `json:"-"`
		}{},
		struct {
			A float64 `json:",omitempty"` // -0 is dropped
		}{},
		struct {
			A int `json:",string"`
		}{},
		struct {
			A int `json:",omitzero"`
		}{},
		struct {
			A int `json:"x"`
			B int `json:"X"`
		}{},
		struct {
			A int `json:"B"`
			B int
		}{},
		struct {
			A int `json:"a b"`
		}{},
		struct{ Ä int }{},
		struct{ L []exactLine }{},
	}
	for _, v := range inexact {
		assert.False(t, jsonExact(reflect.TypeOf(v)), "%T", v)
	}
}

// FuzzJSONExactRoundTrip checks the claim storedForm relies on: for a type
// jsonExact accepts, a value whose stored form roundTrips accepts decodes
// to the same value, bit for bit (floats' signs included); one it refuses
// holds a string that is not UTF-8 or that looks like a replacement
// character.
func FuzzJSONExactRoundTrip(f *testing.F) {
	f.Add("paid", "<a&b>\u2028", int64(math.MinInt64), uint16(7), math.Copysign(0, -1), float32(1e-45), true)
	f.Add("a\xffb", "\uFFFD", int64(1)<<53+1, uint16(0), math.MaxFloat64, float32(math.MaxFloat32), false)
	f.Add("", "\\ufffd", int64(0), uint16(65535), 5e-324, float32(-0.1), false)
	require.True(f, jsonExact(reflect.TypeFor[exactOrder]()))
	f.Fuzz(func(t *testing.T, s1, s2 string, i int64, u uint16, f64 float64, f32 float32, b bool) {
		v := exactOrder{ID: i, Status: s1, Ratio: f32, Lines: [2]exactLine{
			{SKU: s2, Qty: u, Price: f64, Gift: b, Dash: int8(i)},
			{SKU: s1 + s2, Price: -f64},
		}}
		data, err := encodeValue[exactOrder](jsonCodec{}, v)
		if err != nil {
			return // NaN or an infinity: stored as a failure, never as a value
		}
		got, _, decErr := decodeOutcome[exactOrder](&config{codec: jsonCodec{}}, data)
		require.NoError(t, decErr)
		if !roundTrips[exactOrder](jsonCodec{}, data) {
			suspect := func(s string) bool {
				return !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) || strings.Contains(s, `\ufffd`)
			}
			assert.True(t, suspect(s1) || suspect(s2), "%q %q", s1, s2)
			return
		}
		assert.Equal(t, v, got)
		for k := range v.Lines {
			assert.Equal(t, math.Float64bits(v.Lines[k].Price), math.Float64bits(got.Lines[k].Price))
		}
		assert.Equal(t, math.Float32bits(v.Ratio), math.Float32bits(got.Ratio))
	})
}

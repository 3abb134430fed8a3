package once

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Codec encodes values and final errors for the store and decodes them on a
// replay. Implementations must be safe for concurrent use and deterministic
// enough that a decoded value is the value that was encoded. The default
// is encoding/json.
//
// A Codec with a method Lossless() declares its round trip lossless: for
// every value it encodes, decoding gives back a value equal to the
// original in every respect (unexported fields, dynamic types inside
// interfaces, invalid UTF-8 in strings). Do normally gives the first
// caller what a replay gets, the value after the codec's round trip, at
// the cost of one decode; with a lossless codec it returns fn's value as
// it is. encoding/json is not lossless, but the default codec's round trip
// is exact for values of some types, and Do then skips the decode too:
// types made of booleans, integers, floats, strings, arrays and structs of
// them (every field exported, not embedded, under an ASCII name of its own,
// with no tag option but omitempty on a boolean, integer or string), none
// with its own (un)marshaling method, when no string holds bytes that are
// not UTF-8 (nor a replacement character).
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// jsonCodec is the default Codec: encoding/json.
type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// jsonExact reports whether encoding/json's round trip gives back every
// value of type t equal to the original in every respect, but for strings
// that are not valid UTF-8 (json replaces their bad bytes: see
// jsonRoundTrips). Such a type is made of booleans, integers, floats,
// strings, arrays and structs of them, whose every field is exported, not
// embedded, and stored under a name of its own (a json tag of a name and
// at most omitempty, which only drops zero booleans, integers and
// strings); no part has a method that changes its encoding or decoding.
// The answer for each type is computed once.
func jsonExact(t reflect.Type) bool {
	if ok, found := jsonExactTypes.Load(t); found {
		return ok.(bool)
	}
	ok := jsonExactType(t)
	jsonExactTypes.Store(t, ok)
	return ok
}

var jsonExactTypes sync.Map // reflect.Type → bool

// jsonMethods are the methods through which a type takes over its own
// encoding or decoding (encoding/json's and encoding's interfaces).
var jsonMethods = [...]string{"MarshalJSON", "UnmarshalJSON", "MarshalText", "UnmarshalText", "AppendText", "MarshalJSONTo", "UnmarshalJSONFrom"}

func jsonExactType(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, m := range jsonMethods {
		if _, ok := pt.MethodByName(m); ok {
			return false
		}
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.String:
		return t != reflect.TypeFor[json.Number]() // "" encodes as 0
	case reflect.Array:
		return jsonExactType(t.Elem())
	case reflect.Struct:
		names := make([]string, 0, t.NumField())
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Anonymous {
				return false
			}
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			switch {
			case tag == "-", // not encoded
				opts != "" && opts != "omitempty",
				opts == "omitempty" && !jsonOmitsOnlyZero(f.Type.Kind()):
				return false
			case name == "":
				name = f.Name
			}
			if !jsonPlainName(name) { // json may use another name, or fold it otherwise
				return false
			}
			for _, n := range names {
				if strings.EqualFold(n, name) { // one of them is not encoded, or may decode into the other
					return false
				}
			}
			names = append(names, name)
			if !jsonExactType(f.Type) {
				return false
			}
		}
		return true
	}
	return false
}

// jsonOmitsOnlyZero reports whether omitempty drops a value of kind k only
// when it is the zero value, which decoding gives back (not so for a
// float: -0 is dropped and decodes as 0).
func jsonOmitsOnlyZero(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.String:
		return true
	}
	return false
}

// jsonPlainName reports whether name, a json tag's name, is made of ASCII
// letters, digits, '_' and '-' only: json uses such a name as it is.
func jsonPlainName(name string) bool {
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

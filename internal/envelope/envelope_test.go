package envelope

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrips(t *testing.T) {
	binary := []byte{0xff, 0x00, 0xc3, 0x28, '"', '\\'} // not UTF-8, not JSON
	e, err := Parse(Error("declined", "card declined", binary, FlagData))
	require.NoError(t, err)
	assert.Equal(t, Envelope{Kind: KindError, Code: "declined", Message: "card declined", Data: binary, Flags: FlagData}, e)

	e, err = Parse(Error("", "plain", []byte("ignored"), 0))
	require.NoError(t, err)
	assert.Nil(t, e.Data, "data is stored only with FlagData")

	e, err = Parse(TooLarge(2<<20, 1<<20))
	require.NoError(t, err)
	assert.Equal(t, Envelope{Kind: KindTooLarge, Size: 2 << 20, Limit: 1 << 20}, e)

	e, err = Parse(Value(binary))
	require.NoError(t, err)
	assert.Equal(t, KindValue, e.Kind)
	assert.Equal(t, binary, e.Value)
}

func TestMessageIsCutAtARuneBoundary(t *testing.T) {
	msg := strings.Repeat("a", MaxMessage-1) + "é" // é straddles the limit
	e, err := Parse(Error("", msg, nil, 0))
	require.NoError(t, err)
	assert.Len(t, e.Message, MaxMessage-1)
	assert.True(t, utf8.ValidString(e.Message))
}

func TestMalformedIsAnError(t *testing.T) {
	bad := [][]byte{
		nil, {1}, {2, 1}, {1, 9}, {1, 2, '{'}, {1, 3},
		[]byte("\x01\x02" + `{"code":"c","message":"m"}`), // kinds 2 and 3 were never released
		{1, 4}, {1, 4, 0, 5, 'a'}, {1, 4, 8, 0, 0}, {1, 4, 0, 0, 0, 'x'},
		{1, 4, 1, 0, 0}, {1, 5, 1}, {1, 5, 1, 1, 1}, {1, 4, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
	}
	for _, b := range bad {
		_, err := Parse(b)
		assert.ErrorIs(t, err, ErrMalformed, "%v", b)
	}
}

func TestDescribe(t *testing.T) {
	e, _ := Parse(Error("c", "m", []byte(`{"a":1}`), FlagData))
	p, raw := e.Describe()
	assert.JSONEq(t, `{"code":"c","message":"m","data":{"a":1}}`, string(p))
	assert.Nil(t, raw)
	e, _ = Parse(Error("c", "m", []byte{0xff}, FlagData))
	p, _ = e.Describe()
	assert.JSONEq(t, `{"code":"c","message":"m","data_base64":"/w=="}`, string(p))
	e, _ = Parse(Value([]byte{0xff}))
	p, raw = e.Describe()
	assert.Nil(t, p)
	assert.Equal(t, []byte{0xff}, raw)
}

// FuzzParse: any bytes parse or fail with ErrMalformed, never panic, in
// linear time; what parses re-encodes to an envelope that parses the same.
func FuzzParse(f *testing.F) {
	f.Add(Value([]byte(`{"id":7}`)))
	f.Add(Error("declined", "card declined", []byte{0xff, 0}, FlagData))
	f.Add(Error("", "m", nil, 0))
	f.Add(TooLarge(5, 4))
	f.Add([]byte{1, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Parse(data)
		if err != nil {
			if !errorsIsMalformed(err) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		var again []byte
		switch e.Kind {
		case KindValue:
			again = Value(e.Value)
		case KindError:
			again = Error(e.Code, e.Message, e.Data, e.Flags)
		case KindTooLarge:
			if e.Size > 1<<62 || e.Limit > 1<<62 {
				return
			}
			again = TooLarge(int(e.Size), int(e.Limit))
		default:
			t.Fatalf("kind %v", e.Kind)
		}
		e2, err := Parse(again)
		if err != nil {
			t.Fatalf("re-encoded envelope does not parse: %v", err)
		}
		if e.Kind == KindError && len(e.Message) > MaxMessage {
			e.Message = Truncate(e.Message)
		}
		if e2.Kind != e.Kind || !bytes.Equal(e2.Value, e.Value) || e2.Code != e.Code || e2.Message != e.Message ||
			!bytes.Equal(e2.Data, e.Data) || e2.Flags != e.Flags || e2.Size != e.Size || e2.Limit != e.Limit {
			t.Fatalf("round trip changed %+v into %+v", e, e2)
		}
		_, _ = e.Describe()
	})
}

func errorsIsMalformed(err error) bool { return errors.Is(err, ErrMalformed) }

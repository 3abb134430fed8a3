// Package envelope is the stored form of an outcome: the bytes package once
// hands to a store as backends.Record.Outcome. It is the one place that
// writes and parses them; the core and the operator CLI both use it.
//
// Layout: one version byte (1), one kind byte, then the kind's payload.
//
//	KindValue:    the Codec's encoding of the value, as is.
//	KindError:    uvarint flags, then code, message and (if FlagData) data,
//	              each as a uvarint length and that many bytes, verbatim.
//	KindTooLarge: uvarint size, uvarint limit.
//
// Stored bytes never pass through a text conversion: a binary codec's
// encoding of an error comes back byte for byte.
package envelope

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// Version is the first byte of every envelope.
const Version = 1

// Kind bytes (2 and 3 are unused).
const (
	kindValue    byte = 1
	kindError    byte = 4
	kindTooLarge byte = 5
)

// Kind names what an envelope holds.
type Kind uint8

const (
	// KindValue is a value encoded by the Codec.
	KindValue Kind = iota + 1
	// KindError is a final error.
	KindError
	// KindTooLarge is a value that exceeded the outcome size cap.
	KindTooLarge
)

// String returns "value", "error" or "too_large".
func (k Kind) String() string {
	switch k {
	case KindValue:
		return "value"
	case KindError:
		return "error"
	case KindTooLarge:
		return "too_large"
	default:
		return "unknown"
	}
}

// FlagData, in the flags of a KindError envelope, says that Data holds
// the registered error type's encoding. Other bits are reserved (zero).
const FlagData = 1

// MaxMessage bounds the message text stored with a final error, in bytes.
const MaxMessage = 4096

// Envelope is a parsed outcome. Byte slices alias the parsed data.
type Envelope struct {
	Kind Kind
	// Value is the Codec's encoding (KindValue).
	Value []byte
	// Code, Message, Data and Flags describe a final error (KindError).
	// Data is nil without FlagData.
	Code    string
	Message string
	Data    []byte
	Flags   uint64
	// Size and Limit describe a too-large value (KindTooLarge).
	Size, Limit uint64
}

// ErrMalformed is the cause of every parse failure.
var ErrMalformed = errors.New("malformed outcome envelope")

// Header is the two bytes that start a value envelope; the codec's bytes
// follow.
func Header() [2]byte { return [2]byte{Version, kindValue} }

// Value returns the envelope of a codec-encoded value.
func Value(payload []byte) []byte {
	out := make([]byte, 2, 2+len(payload))
	out[0], out[1] = Version, kindValue
	return append(out, payload...)
}

// Error returns the envelope of a final error. message is cut to
// MaxMessage bytes at a rune boundary. data is stored only with FlagData.
func Error(code, message string, data []byte, flags uint64) []byte {
	message = Truncate(message)
	if flags&FlagData == 0 {
		data = nil
	}
	n := 2 + 4*binary.MaxVarintLen64 + len(code) + len(message) + len(data)
	out := append(make([]byte, 0, n), Version, kindError)
	out = binary.AppendUvarint(out, flags)
	out = appendBytes(out, []byte(code))
	out = appendBytes(out, []byte(message))
	if flags&FlagData != 0 {
		out = appendBytes(out, data)
	}
	return out
}

// TooLarge returns the envelope of a value of size bytes over limit.
func TooLarge(size, limit int) []byte {
	out := append(make([]byte, 0, 2+2*binary.MaxVarintLen64), Version, kindTooLarge)
	out = binary.AppendUvarint(out, uint64(max(size, 0)))
	return binary.AppendUvarint(out, uint64(max(limit, 0)))
}

// Truncate cuts s to at most MaxMessage bytes without splitting a rune.
func Truncate(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	cut := MaxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func appendBytes(out, b []byte) []byte {
	out = binary.AppendUvarint(out, uint64(len(b)))
	return append(out, b...)
}

// Parse reads an envelope. It costs time linear in len(data), allocates
// only the code and message strings, and fails with an error wrapping
// ErrMalformed on anything this package did not write.
func Parse(data []byte) (Envelope, error) {
	if len(data) < 2 || data[0] != Version {
		return Envelope{}, malformed("unknown envelope version")
	}
	body := data[2:]
	switch data[1] {
	case kindValue:
		return Envelope{Kind: KindValue, Value: body}, nil
	case kindError:
		return parseError(body)
	case kindTooLarge:
		r := reader{b: body}
		size, limit := r.uvarint(), r.uvarint()
		if r.err != nil || len(r.b) != 0 {
			return Envelope{}, malformed("bad too-large envelope")
		}
		return Envelope{Kind: KindTooLarge, Size: size, Limit: limit}, nil
	default:
		return Envelope{}, malformed("unknown outcome kind")
	}
}

func parseError(body []byte) (Envelope, error) {
	r := reader{b: body}
	e := Envelope{Kind: KindError, Flags: r.uvarint()}
	e.Code = string(r.bytes())
	e.Message = string(r.bytes())
	if e.Flags&FlagData != 0 {
		e.Data = r.bytes()
	}
	if r.err != nil || len(r.b) != 0 || e.Flags>>1 != 0 {
		return Envelope{}, malformed("bad error envelope")
	}
	return e, nil
}

// Describe renders an envelope for operator tooling: its kind, and a JSON
// payload when there is one to show — a value's encoding as is, or an
// error as {"code", "message", "data"} ("data" as JSON when the registered
// type's encoding is JSON, else "data_base64"), or a too-large value as
// {"size", "limit"}. raw is a value's encoding that is not JSON.
func (e Envelope) Describe() (payload json.RawMessage, raw []byte) {
	switch e.Kind {
	case KindValue:
		if len(e.Value) == 0 {
			return nil, nil
		}
		if json.Valid(e.Value) {
			return e.Value, nil
		}
		return nil, e.Value
	case KindError:
		v := struct {
			Code       string          `json:"code,omitempty"`
			Message    string          `json:"message"`
			Data       json.RawMessage `json:"data,omitempty"`
			DataBase64 string          `json:"data_base64,omitempty"`
		}{Code: e.Code, Message: e.Message}
		if json.Valid(e.Data) {
			v.Data = e.Data
		} else if e.Data != nil {
			v.DataBase64 = base64.StdEncoding.EncodeToString(e.Data)
		}
		b, _ := json.Marshal(v) // strings and valid RawMessage always marshal
		return b, nil
	case KindTooLarge:
		b, _ := json.Marshal(struct {
			Size  uint64 `json:"size"`
			Limit uint64 `json:"limit"`
		}{e.Size, e.Limit})
		return b, nil
	}
	return nil, nil
}

// reader consumes length-prefixed fields; the first failure sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = ErrMalformed
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = ErrMalformed
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func malformed(reason string) error { return &malformedError{reason: reason} }

// malformedError says why an envelope did not parse; it matches
// ErrMalformed.
type malformedError struct{ reason string }

func (e *malformedError) Error() string { return ErrMalformed.Error() + ": " + e.reason }
func (e *malformedError) Unwrap() error { return ErrMalformed }

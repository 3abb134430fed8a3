package once

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"
)

// The stored form of an outcome: one version byte, one kind byte, then the
// payload. A value's payload is the Codec's encoding of the value; an
// error's payload is a JSON errorEnvelope.
const envelopeVersion = 1

const (
	kindValue byte = iota + 1
	kindError
	kindTooLarge
)

// maxStoredMessage bounds the message text stored with a final error.
const maxStoredMessage = 4096

type errorEnvelope struct {
	Code    string          `json:"code,omitempty"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	// Text reports that Data is a JSON string wrapping a non-JSON codec's
	// encoding.
	Text bool `json:"text,omitempty"`
}

func encodeValue[T any](c Codec, v T) ([]byte, error) {
	if _, ok := c.(JSONCodec); ok {
		return encodeJSONValue(v)
	}
	data, err := c.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 2, 2+len(data))
	out[0], out[1] = envelopeVersion, kindValue
	return append(out, data...), nil
}

// jsonEncoder is a reusable buffer with a json.Encoder writing into it.
type jsonEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var jsonEncoders = sync.Pool{New: func() any {
	e := new(jsonEncoder)
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// maxPooledEncoder is the largest buffer kept for reuse.
const maxPooledEncoder = 64 << 10

// encodeJSONValue is encodeValue for JSONCodec, with one allocation less
// and no copy of the payload: it encodes straight after the envelope
// header into a pooled buffer. The bytes are json.Marshal's: an Encoder
// escapes HTML as Marshal does and only appends a newline, dropped here.
func encodeJSONValue(v any) ([]byte, error) {
	e := jsonEncoders.Get().(*jsonEncoder)
	defer func() {
		if e.buf.Cap() <= maxPooledEncoder {
			jsonEncoders.Put(e)
		}
	}()
	e.buf.Reset()
	e.buf.Write([]byte{envelopeVersion, kindValue})
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	b := e.buf.Bytes()
	return bytes.Clone(b[:len(b)-1]), nil
}

// encodeError stores a final error: as its registered type when one matches
// and encodes, else as code and message.
func encodeError(cfg *config, err error) []byte {
	env := errorEnvelope{Message: err.Error()}
	if len(env.Message) > maxStoredMessage {
		env.Message = env.Message[:maxStoredMessage]
	}
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		env.Code = coded.ErrorCode()
	}
	for i := len(cfg.errorTypes) - 1; i >= 0; i-- {
		t := cfg.errorTypes[i]
		if e, ok := t.match(err); ok {
			if data, mErr := cfg.codec.Marshal(e); mErr == nil && json.Valid(data) {
				env.Code, env.Data = t.code, data
			} else if mErr == nil {
				env.Code, env.Data, env.Text = t.code, mustJSONString(data), true
			}
			break
		}
	}
	payload, _ := json.Marshal(env) // strings and RawMessage always marshal
	out := make([]byte, 2, 2+len(payload))
	out[0], out[1] = envelopeVersion, kindError
	return append(out, payload...)
}

// mustJSONString wraps a non-JSON codec output as a JSON string so the
// envelope stays valid JSON.
func mustJSONString(data []byte) json.RawMessage {
	b, _ := json.Marshal(string(data))
	return b
}

func encodeTooLarge() []byte { return []byte{envelopeVersion, kindTooLarge} }

// decodeOutcome turns a stored outcome back into a value or a final error.
// A decode failure is returned as the third result (ErrUndecodable).
func decodeOutcome[T any](cfg *config, data []byte) (T, error, error) {
	var zero T
	if len(data) < 2 || data[0] != envelopeVersion {
		return zero, nil, &undecodable{errors.New("unknown envelope version")}
	}
	switch data[1] {
	case kindValue:
		var v T
		if err := cfg.codec.Unmarshal(data[2:], &v); err != nil {
			return zero, nil, &undecodable{err}
		}
		return v, nil, nil
	case kindTooLarge:
		return zero, &OutcomeTooLargeError{Limit: cfg.maxOutcome}, nil
	case kindError:
		var env errorEnvelope
		if err := json.Unmarshal(data[2:], &env); err != nil {
			return zero, nil, &undecodable{err}
		}
		return zero, decodeError(cfg, env), nil
	default:
		return zero, nil, &undecodable{errors.New("unknown outcome kind")}
	}
}

func decodeError(cfg *config, env errorEnvelope) error {
	if env.Data != nil {
		for i := len(cfg.errorTypes) - 1; i >= 0; i-- {
			t := cfg.errorTypes[i]
			if t.code != env.Code {
				continue
			}
			data := []byte(env.Data)
			if env.Text {
				var s string
				if json.Unmarshal(data, &s) != nil {
					break
				}
				data = []byte(s)
			}
			if e, err := t.decode(cfg.codec, data); err == nil && e != nil {
				return e
			}
			break
		}
	}
	return &StoredError{Code: env.Code, Message: env.Message}
}

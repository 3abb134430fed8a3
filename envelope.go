package once

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/stagedoor/once/internal/envelope"
)

// The stored form of an outcome is written and parsed by package
// internal/envelope: a version byte, a kind byte, then the Codec's bytes
// of a value, or the code, message and registered-type encoding of a final
// error, each length-prefixed and verbatim (no text conversion, so a
// binary codec's bytes survive).

func encodeValue[T any](c Codec, v T) ([]byte, error) {
	if _, ok := c.(jsonCodec); ok {
		return encodeJSONValue(v)
	}
	data, err := c.Marshal(v)
	if err != nil {
		return nil, err
	}
	return envelope.Value(data), nil
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

// encodeJSONValue is encodeValue for jsonCodec, with one allocation less
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
	h := envelope.Header()
	e.buf.Write(h[:])
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	b := e.buf.Bytes()
	return bytes.Clone(b[:len(b)-1]), nil
}

// encodeError stores a final error: its full text (cut to
// envelope.MaxMessage bytes), its code, and, when a registered type is in
// its chain and encodes, that error's encoding under the type's code.
// Error, ErrorCode, As and the codec are user code: a panic in them
// propagates to the caller (Do's record stores it as an outcome that
// cannot be encoded).
func encodeError(cfg *config, err error) []byte {
	msg := err.Error()
	var code string
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		code = coded.ErrorCode()
	}
	var data []byte
	var flags uint64
	for i := len(cfg.errorTypes) - 1; i >= 0; i-- {
		t := cfg.errorTypes[i]
		if e, ok := t.match(err); ok {
			if enc, mErr := cfg.codec.Marshal(e); mErr == nil {
				code, data, flags = t.code, enc, envelope.FlagData
			}
			break
		}
	}
	return envelope.Error(code, msg, data, flags)
}

// encodeFailure is the final error stored when fn's value cannot be
// stored or brought back: every call with the key gets its text.
func encodeFailure(cfg *config, what string, err error) []byte {
	return encodeError(cfg, fmt.Errorf("once: outcome cannot be %s: %w", what, err))
}

// decodeOutcome turns a stored outcome back into a value or a final error.
// A decode failure is returned as the third result (ErrUndecodable).
func decodeOutcome[T any](cfg *config, data []byte) (T, error, error) {
	var zero T
	env, err := envelope.Parse(data)
	if err != nil {
		return zero, nil, &undecodable{err}
	}
	switch env.Kind {
	case envelope.KindValue:
		var v T
		if err := cfg.codec.Unmarshal(env.Value, &v); err != nil {
			return zero, nil, &undecodable{err}
		}
		return v, nil, nil
	case envelope.KindTooLarge:
		return zero, &OutcomeTooLargeError{Size: int(min(env.Size, 1<<62)), Limit: int(min(env.Limit, 1<<62))}, nil
	default:
		return zero, decodeError(cfg, env), nil
	}
}

// decodeError rebuilds a final error. With a registered type under the
// stored code, the decoded error itself when its text is the stored text,
// else a *StoredError with the stored text that wraps it (so errors.As
// and errors.Is reach it, and the text is the original's); without one, a
// *StoredError with the stored code and text.
func decodeError(cfg *config, env envelope.Envelope) error {
	if env.Flags&envelope.FlagData != 0 {
		for i := len(cfg.errorTypes) - 1; i >= 0; i-- {
			t := cfg.errorTypes[i]
			if t.code != env.Code {
				continue
			}
			if e, err := t.decode(cfg.codec, env.Data); err == nil && e != nil {
				if e.Error() == env.Message {
					return e
				}
				return &StoredError{Code: env.Code, Message: env.Message, err: e}
			}
			break
		}
	}
	return &StoredError{Code: env.Code, Message: env.Message}
}

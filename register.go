package once

import (
	"errors"
	"reflect"
)

var errNilError = errors.New("decoded a nil error")

// errorType is a registered final-error type: how to recognise it in an
// error chain and how to bring it back from the store.
type errorType struct {
	code   string
	match  func(err error) (error, bool)
	decode func(c Codec, data []byte) (error, error)
}

// RegisterError registers E as a final-error type under code, so that a
// replay of a stored E returns an E again and errors.As works on the replay
// exactly as on the first run. E is encoded with the Keeper's Codec (JSON
// by default), so its exported fields survive the round trip; use a pointer
// type (*CardDeclined) if the type's methods have pointer receivers.
//
// The code is stored with the error and identifies the type across deploys:
// keep it stable. An empty code defaults to E's type name. Registering two
// types under one code keeps the later one.
func RegisterError[E error](code string) Option {
	if code == "" {
		code = reflect.TypeFor[E]().String()
	}
	et := errorType{
		code: code,
		match: func(err error) (error, bool) {
			var e E
			if errors.As(err, &e) {
				return e, true
			}
			return nil, false
		},
		decode: func(c Codec, data []byte) (error, error) {
			var e E
			if err := c.Unmarshal(data, &e); err != nil {
				return nil, err
			}
			if v := reflect.ValueOf(&e).Elem(); v.Kind() == reflect.Pointer && v.IsNil() {
				return nil, errNilError // stored "null": no error to return
			}
			return e, nil
		},
	}
	return func(c *config) {
		types := make([]errorType, 0, len(c.errorTypes)+1)
		for _, t := range c.errorTypes {
			if t.code != code {
				types = append(types, t)
			}
		}
		c.errorTypes = append(types, et)
	}
}

package once

import "errors"

// Kinds of stored outcome reported by DescribeOutcome.
const (
	OutcomeValue    = "value"
	OutcomeError    = "error"
	OutcomeTooLarge = "too_large"
)

// DescribeOutcome tells what a stored outcome (backends.Record.Outcome)
// holds without decoding it into a type, for operator tooling:
//
//   - OutcomeValue: payload is the Codec's encoding of the value (JSON with
//     the default JSONCodec).
//   - OutcomeError: payload is a JSON object {"code", "message", "data"}
//     describing a final error; "data" is the registered error type's
//     encoding, when it had one.
//   - OutcomeTooLarge: the value exceeded the size cap; payload is empty.
//
// payload aliases data. An outcome not written by this version of package
// once gives an error that matches ErrUndecodable.
func DescribeOutcome(data []byte) (kind string, payload []byte, err error) {
	if len(data) < 2 || data[0] != envelopeVersion {
		return "", nil, &undecodable{errors.New("unknown envelope version")}
	}
	switch data[1] {
	case kindValue:
		return OutcomeValue, data[2:], nil
	case kindError:
		return OutcomeError, data[2:], nil
	case kindTooLarge:
		return OutcomeTooLarge, data[2:], nil
	default:
		return "", nil, &undecodable{errors.New("unknown outcome kind")}
	}
}

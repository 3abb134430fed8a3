package hashers

import (
	"errors"
	"fmt"
)

// ErrBodyTooLarge is matched by errors.Is for a *[BodyTooLargeError].
// An HTTP middleware maps it to 413 Content Too Large.
var ErrBodyTooLarge = errors.New("hashers: request body too large")

// ErrInvalidRequest is returned by RequestHasher.Hash for a nil request or
// a request without a URL.
var ErrInvalidRequest = errors.New("hashers: invalid request")

// ErrInvalidJSON is matched by errors.Is for a *[JSONError]: the input is
// not a single valid I-JSON value (for [Fields], not an object). An HTTP
// middleware maps it to 400 Bad Request.
var ErrInvalidJSON = errors.New("hashers: invalid JSON")

// ErrInvalidPath is wrapped by the error [Fields] returns for an empty
// path list or a path with an empty segment ("", "a..b", ".a"). It is a
// programming error, not a client one.
var ErrInvalidPath = errors.New("hashers: invalid field path")

// BodyTooLargeError reports a request body longer than the hasher's cap.
// Nothing of the body is lost: see [RequestHasher.Hash].
type BodyTooLargeError struct {
	// Limit is the cap that was exceeded, in bytes.
	Limit int64
}

// Error returns a message naming the limit.
func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("hashers: request body exceeds %d bytes", e.Limit)
}

// Is reports whether target is [ErrBodyTooLarge].
func (e *BodyTooLargeError) Is(target error) bool { return target == ErrBodyTooLarge }

// JSONError reports why a document was rejected and where. Its message
// names a position and a reason, never the document's content.
type JSONError struct {
	// Offset is the byte offset in the input where the problem was found.
	Offset int64
	// Reason says what is wrong, e.g. "duplicate object key".
	Reason string
}

// Error returns a message naming the offset and the reason.
func (e *JSONError) Error() string {
	return fmt.Sprintf("hashers: invalid JSON at offset %d: %s", e.Offset, e.Reason)
}

// Is reports whether target is [ErrInvalidJSON].
func (e *JSONError) Is(target error) bool { return target == ErrInvalidJSON }

package hashers

import (
	"errors"
	"fmt"
)

// ErrBodyTooLarge is matched by errors.Is for a *[BodyTooLargeError].
// An HTTP middleware maps it to 413 Content Too Large.
var ErrBodyTooLarge = errors.New("hashers: request body too large")

// ErrBodyRead is matched by errors.Is for a *[BodyReadError]: reading the
// request body failed, so nothing is wrong with the request as far as it
// was received, but it was not received whole: a client that disconnected
// or stalled past the server's read timeout, an http.MaxBytesReader limit
// (errors.As finds the *http.MaxBytesError too). It is not
// [ErrBodyTooLarge], which is the hasher's own cap.
var ErrBodyRead = errors.New("hashers: reading request body failed")

// ErrInvalidRequest is returned by RequestHasher.Hash for a nil request or
// a request without a URL.
var ErrInvalidRequest = errors.New("hashers: invalid request")

// ErrInvalidJSON is matched by errors.Is for a *[JSONError]: the input is
// not a single valid I-JSON value (for [Fields], not an object). An HTTP
// middleware maps it to 400 Bad Request.
var ErrInvalidJSON = errors.New("hashers: invalid JSON")

// ErrInvalidPath is wrapped by the error [Fields] returns for an empty
// path list, a path with an empty segment ("", "a..b", ".a") or a path
// that is not valid UTF-8. It is a programming error, not a client one.
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

// BodyReadError reports that reading the request body failed, with the
// reader's error. Nothing of the body is lost: see [RequestHasher.Hash].
type BodyReadError struct {
	// Err is the error the body's Read returned.
	Err error
}

// Error returns a message with the read error's.
func (e *BodyReadError) Error() string {
	if e.Err == nil {
		return ErrBodyRead.Error()
	}
	return "hashers: reading request body: " + e.Err.Error()
}

// Unwrap returns Err, so errors.Is and errors.As see the cause (io.ErrUnexpectedEOF,
// a *http.MaxBytesError, a net.Error).
func (e *BodyReadError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrBodyRead].
func (e *BodyReadError) Is(target error) bool { return target == ErrBodyRead }

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

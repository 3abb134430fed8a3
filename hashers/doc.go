// Package hashers makes request fingerprints for once.Do: fixed-size
// SHA-256 digests that are equal for a retry of the same request and
// differ when a client reuses an idempotency key for another one.
//
// Every function here returns a 32-byte [once.Fingerprint] (see [Size]).
// The same input gives the same digest in every process, on every
// platform and in every release of this package that keeps the format
// version in its domain tag ("v1"); a digest is stored with its key for the
// whole retention period, so a format change would turn the retries in
// flight during a deploy into key-reuse errors. [JSON], [Fields] and
// [RequestHasher] hash inputs that begin with distinct domain tags, so
// their digests never coincide with one another's; [Parts] and [Strings]
// have no tag, so theirs can coincide with any (see Parts).
//
// # Parts
//
// [Parts] and [Strings] hash a sequence of byte strings, each preceded by its
// length, so ("ab", "c") and ("a", "bc") give different digests. Use them
// to fingerprint anything that is not an HTTP request or a JSON document:
// a queue message's type and payload, a job's name and arguments.
//
// Their input carries no domain tag: it is exactly the parts given, so
// their digests can equal the other hashers'. Strings(t, c) equals
// JSON(doc) when t is JSON's domain tag and c the canonical form of doc,
// and Parts with the right parts equals a RequestHasher digest. The
// fingerprints of one key must therefore all come from one hasher
// configured one way; beginning your parts with a fixed tag of your own
// ("myapp/refund/v1") keeps them apart from any other digest.
//
// # HTTP requests
//
// [RequestHasher] hashes a request's method, its request target (the
// escaped path and, by default, the canonical query: decoded pairs sorted
// by name) and its body: the request hash of an idempotency-key table. It
// reads the body under a size cap and puts it back, so the handler that
// runs afterwards reads the same bytes. Its Body field plugs in a body
// canonicaliser such as [JSON], so that a retry whose JSON body was
// re-serialised with another key order still matches.
//
// # JSON
//
// [JSON] hashes the value a JSON document denotes rather than its bytes:
// object key order, insignificant whitespace, string escapes and the
// spelling of numbers do not matter; array order, types and exact numeric
// values do. [Fields] hashes only selected fields of a JSON object.
//
// Both accept I-JSON (RFC 7493): duplicate object keys, invalid UTF-8 and
// unpaired surrogate escapes are errors that wrap [ErrInvalidJSON], because
// parsers disagree on what such documents mean and, worse, ordinary
// decoders map different inputs to the same value (every invalid byte
// becomes U+FFFD), which would make two different payloads look alike.
// Nesting deeper than [MaxDepth] (1000) is an error too, so that the parser's
// stack stays small.
//
// JSON does not implement the JSON Canonicalization Scheme (RFC 8785).
// JCS serialises numbers as IEEE 754 doubles, so 0.1 and
// 0.10000000000000001, or 9007199254740993 and 9007199254740992, canonicalise
// to the same text: two different payment amounts or two 64-bit ids would
// share a fingerprint and the second request would be answered with the
// first one's stored response. JSON compares numbers by exact decimal value
// instead, with no precision or range limit. JCS's other rules (sorted
// keys, decoded strings) are kept in spirit; the canonical form itself is a
// private, length-prefixed binary encoding that is hashed, never shown.
package hashers

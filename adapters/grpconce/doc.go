// Package grpconce makes unary gRPC calls idempotent with package once.
//
// # Server
//
// ServerInterceptor reads the key from the "idempotency-key" metadata,
// the scope from a function the caller provides (the authenticated
// principal; there is no default), and binds the key to a fingerprint of
// the full method name and the deterministic protobuf marshalling of the
// request. The first call runs the handler; a retry with the same key
// receives the stored response message, or the stored status with its
// details, without running the handler, and the response header
// "idempotent-replayed: true".
//
// Which outcomes are stored is decided by the status code (Config.Classify,
// DefaultClassify): OK and the codes that answer the request
// (InvalidArgument, NotFound, AlreadyExists, PermissionDenied,
// FailedPrecondition, OutOfRange) are stored and replayed; the transient
// ones (Unavailable, DeadlineExceeded, ResourceExhausted, Aborted,
// Internal, Unknown, Canceled, Unauthenticated, Unimplemented, DataLoss)
// never are: the claim is released and the retry runs the handler again.
//
// Errors of the protocol itself use gRPC's own codes: a key that is
// missing (where required), empty, longer than 255 bytes, sent twice or
// malformed, a request that cannot be marshalled, or a key reused with
// another request → InvalidArgument; a call with the same key still in
// progress → Aborted with a google.rpc.RetryInfo detail; the store
// unreachable → Unavailable.
//
// # Client
//
// ClientInterceptor attaches one key per intent — the caller's (WithKey,
// or the metadata already set), or a random one — to every attempt of a
// call, and retries the attempts that are safe to retry with the same key:
// Unavailable (connection errors included), ResourceExhausted, and
// Aborted carrying a RetryInfo (a duplicate in progress), with capped
// exponential backoff and full jitter, honouring the server's retry delay
// and never past the context's deadline.
package grpconce

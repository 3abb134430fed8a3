// Package oncegrpc makes unary gRPC calls idempotent with package once.
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
// The call that runs the handler always gets the handler's response or
// status, whatever becomes of recording it (a store failure, a lost
// lease, a response too large to store; Config.OnError is told). The
// reply is stored in the adapter's own compact form (the message's wire
// bytes), whatever the Keeper's codec; a response over
// Config.MaxStoredResponse (1 MiB by default) is not stored, and every
// retry with its key is answered Internal with an ErrorInfo of reason
// ReasonResponseUnavailable, without running the handler again.
//
// Which outcomes are stored is decided by the status code (Config.Classify;
// DefaultClassify has the table): OK and the codes that answer the
// request (NotFound, AlreadyExists, PermissionDenied, FailedPrecondition)
// are stored and replayed; the codes that mean nothing was done or that
// the request must change (InvalidArgument, OutOfRange, ResourceExhausted,
// Unavailable, Aborted, Canceled, Unauthenticated, Unimplemented) are
// released: never stored, the next call with the key runs the handler
// again, so a corrected request can reuse its key; the codes of an
// unknown outcome (DeadlineExceeded, Unknown, Internal, DataLoss) hold the
// key for the Keeper's hold period, during which retries are answered
// Aborted with ReasonHeld, as oncehttp holds a 5xx.
//
// Errors of the protocol itself use gRPC's own codes, with an ErrorInfo
// (domain ErrorDomain) where a client may act on them: a key that is
// missing (where required), empty, longer than 255 bytes, sent twice or
// malformed, or a request that cannot be marshalled → InvalidArgument; a
// key reused with another request → InvalidArgument, ReasonKeyReused; a
// call with the same key still in progress → Aborted with a
// google.rpc.RetryInfo, ReasonInProgress; a held key → Aborted with a
// RetryInfo, ReasonHeld; no scope (Config.Scope failed with an error
// that is not a status, or returned "") → Unauthenticated; the store unreachable → Unavailable; any other
// failure inside the interceptor → Internal with a generic message (the
// error goes to Config.OnError, never to the client).
//
// Metadata the handler sets (grpc.SetHeader, grpc.SetTrailer) reaches the
// call that ran it; a replay carries only "idempotent-replayed" unless the
// keys are listed in Config.StoreMetadata.
//
// # Client
//
// ClientInterceptor attaches one key per intent to every attempt of a
// call — the caller's (WithKey, or the metadata already set), or, for the
// methods ClientConfig.Methods lists, a random one — and retries the
// attempts that are safe to retry with the same key: Unavailable
// (connection errors included), ResourceExhausted, and Aborted carrying a
// RetryInfo (a duplicate in progress), with capped exponential backoff
// and full jitter, never past the context's deadline. A server's RetryInfo
// delay is waited in full up to ClientConfig.MaxRetryDelay (30 s by
// default); a longer one is returned to the caller at once. A held key
// (Aborted, ReasonHeld: its outcome is unknown) is returned, not retried.
// When the context ends while it waits, the call ends with the context's
// error (status Canceled or DeadlineExceeded), which wraps the last
// attempt's. By default (a nil ClientConfig, or nil Methods) only the
// calls that carry a key of their caller's are keyed: every other call,
// a read say, passes through untouched, so it is neither retried nor
// stored on the server for the retention.
//
// # Configuration errors
//
// ServerInterceptor and ClientInterceptor check their configuration when
// they are called, so that no call fails on a configuration they
// accepted: a field out of range, a StoreMetadata key that can never be
// stored, or an option the core refuses (in the Keeper's policy or
// Config.Options, checked without a store call) is a *ConfigError naming
// the field (errors.Is ErrInvalidConfig), and no interceptor is returned.
package oncegrpc

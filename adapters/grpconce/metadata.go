package grpconce

// Metadata keys (gRPC metadata keys are lower case).
const (
	// KeyHeader carries the idempotency key of a call.
	KeyHeader = "idempotency-key"
	// ReplayedHeader is set to "true" in the response header of a call
	// answered from the store.
	ReplayedHeader = "idempotent-replayed"
)

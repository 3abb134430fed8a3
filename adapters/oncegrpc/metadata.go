package oncegrpc

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Metadata keys (gRPC metadata keys are lower case).
const (
	// KeyHeader carries the idempotency key of a call.
	KeyHeader = "idempotency-key"
	// ReplayedHeader is set to "true" in the response header of a call
	// answered from the store.
	ReplayedHeader = "idempotent-replayed"
)

// storedKeys is the allow-list of Config.StoreMetadata, lower-cased. A
// key that can never be stored (empty, not a metadata key, reserved) is a
// *ConfigError rather than an entry silently ignored.
func storedKeys(keys []string) (map[string]bool, error) {
	set := make(map[string]bool, len(keys))
	for _, key := range keys {
		k := strings.ToLower(key)
		reason := ""
		switch {
		case k == "":
			reason = "empty key"
		case strings.HasPrefix(k, "grpc-"), strings.HasPrefix(k, ":"):
			reason = "reserved key " + strconv.Quote(key) + ": gRPC's own metadata is never stored"
		case k == KeyHeader, k == ReplayedHeader:
			reason = "reserved key " + strconv.Quote(key) + ": the interceptor's own metadata is never stored"
		case !validMetadataKey(k):
			reason = "not a metadata key: " + strconv.Quote(key) + " (letters, digits, '-', '_' and '.' only)"
		}
		if reason != "" {
			return nil, &ConfigError{Field: "StoreMetadata", Reason: reason}
		}
		set[k] = true
	}
	return set, nil
}

// validMetadataKey reports whether k, lower-cased, holds only the
// characters gRPC allows in a metadata key: 0-9 a-z - _ .
func validMetadataKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// recordingStream is the handler's grpc.ServerTransportStream: it passes
// every call on and keeps a copy of the allow-listed header and trailer
// metadata that was accepted.
type recordingStream struct {
	grpc.ServerTransportStream
	keys map[string]bool

	mu              sync.Mutex
	header, trailer metadata.MD
}

// recordMetadata returns ctx with a recordingStream in place of its
// stream, or nil when there is nothing to record (no allow-list, or no
// stream: the interceptor was called outside a gRPC server).
func recordMetadata(ctx context.Context, keys map[string]bool) (context.Context, *recordingStream) {
	if len(keys) == 0 {
		return ctx, nil
	}
	stream := grpc.ServerTransportStreamFromContext(ctx)
	if stream == nil {
		return ctx, nil
	}
	r := &recordingStream{ServerTransportStream: stream, keys: keys}
	return grpc.NewContextWithServerTransportStream(ctx, r), r
}

func (r *recordingStream) SetHeader(md metadata.MD) error {
	err := r.ServerTransportStream.SetHeader(md)
	if err == nil {
		r.keep(&r.header, md)
	}
	return err
}

func (r *recordingStream) SendHeader(md metadata.MD) error {
	err := r.ServerTransportStream.SendHeader(md)
	if err == nil {
		r.keep(&r.header, md)
	}
	return err
}

func (r *recordingStream) SetTrailer(md metadata.MD) error {
	err := r.ServerTransportStream.SetTrailer(md)
	if err == nil {
		r.keep(&r.trailer, md)
	}
	return err
}

func (r *recordingStream) keep(dst *metadata.MD, md metadata.MD) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, vals := range md {
		k = strings.ToLower(k)
		if !r.keys[k] {
			continue
		}
		if *dst == nil {
			*dst = metadata.MD{}
		}
		(*dst)[k] = append((*dst)[k], vals...)
	}
}

// recorded returns copies of what was kept; nil, nil for a nil r.
func (r *recordingStream) recorded() (header, trailer metadata.MD) {
	if r == nil {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.header.Copy(), r.trailer.Copy()
}

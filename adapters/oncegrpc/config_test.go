package oncegrpc_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncegrpc"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// countingStore counts the store calls the constructors make.
type countingStore struct {
	backends.Store
	calls int
}

func (s *countingStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	s.calls++
	return s.Store.Claim(ctx, p)
}

func (s *countingStore) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	s.calls++
	return s.Store.Resolve(ctx, p)
}

// TestServerInterceptorRefusesBadConfig: every Config field and option
// with which calls would fail (or a listed key would silently never be
// stored) is refused at construction with a *ConfigError naming the
// field, without a store call and without a panic.
func TestServerInterceptorRefusesBadConfig(t *testing.T) {
	store := &countingStore{Store: memory.New(nil)}
	k := once.New(store)
	withScope := func(cfg oncegrpc.Config) oncegrpc.Config {
		cfg.Scope = userScope
		return cfg
	}
	for _, tc := range []struct {
		name  string
		k     *once.Keeper
		cfg   oncegrpc.Config
		field string
		cause error
	}{
		{"nil Keeper", nil, withScope(oncegrpc.Config{}), "Keeper", nil},
		{"no Scope", k, oncegrpc.Config{}, "Scope", oncegrpc.ErrNoScope},
		{"negative MaxStoredResponse", k, withScope(oncegrpc.Config{MaxStoredResponse: -1}), "MaxStoredResponse", nil},
		{"lowest MaxStoredResponse", k, withScope(oncegrpc.Config{MaxStoredResponse: math.MinInt}), "MaxStoredResponse", nil},
		{"empty metadata key", k, withScope(oncegrpc.Config{StoreMetadata: []string{"x-order-id", ""}}), "StoreMetadata", nil},
		{"grpc- metadata key", k, withScope(oncegrpc.Config{StoreMetadata: []string{"grpc-status"}}), "StoreMetadata", nil},
		{"GRPC- metadata key", k, withScope(oncegrpc.Config{StoreMetadata: []string{"Grpc-Message"}}), "StoreMetadata", nil},
		{"pseudo-header", k, withScope(oncegrpc.Config{StoreMetadata: []string{":authority"}}), "StoreMetadata", nil},
		{"the key header", k, withScope(oncegrpc.Config{StoreMetadata: []string{"Idempotency-Key"}}), "StoreMetadata", nil},
		{"the replayed header", k, withScope(oncegrpc.Config{StoreMetadata: []string{oncegrpc.ReplayedHeader}}), "StoreMetadata", nil},
		{"space in a metadata key", k, withScope(oncegrpc.Config{StoreMetadata: []string{"x order"}}), "StoreMetadata", nil},
		{"colon in a metadata key", k, withScope(oncegrpc.Config{StoreMetadata: []string{"x-order:id"}}), "StoreMetadata", nil},
		{"non-ASCII metadata key", k, withScope(oncegrpc.Config{StoreMetadata: []string{"x-ordre-é"}}), "StoreMetadata", nil},
		{"negative wait", k, withScope(oncegrpc.Config{Options: []once.Option{once.WithWait(-1)}}), "Options", nil},
		{"zero lease", k, withScope(oncegrpc.Config{Options: []once.Option{once.WithLease(0)}}), "Options", nil},
		{"negative retention", k, withScope(oncegrpc.Config{Options: []once.Option{once.WithRetention(-time.Second)}}), "Options", nil},
		{"the Keeper's lease", once.New(store, once.WithLease(-1)), withScope(oncegrpc.Config{}), "Keeper", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var icpt any
			var err error
			require.NotPanics(t, func() { icpt, err = oncegrpc.ServerInterceptor(tc.k, tc.cfg) })
			var ce *oncegrpc.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field)
			assert.NotEmpty(t, ce.Reason)
			assert.Contains(t, err.Error(), tc.field)
			assert.ErrorIs(t, err, oncegrpc.ErrInvalidConfig)
			if tc.cause != nil {
				assert.ErrorIs(t, err, tc.cause)
			}
			if tc.field == "Options" || tc.field == "Keeper" && tc.k != nil {
				var invalid *once.InvalidInputError
				assert.ErrorAs(t, err, &invalid, "wraps the core's error")
			}
			assert.Nil(t, icpt)
		})
	}
	assert.Zero(t, store.calls, "ServerInterceptor sends nothing to the store")
}

// TestServerInterceptorAcceptsGoodConfig: the defaults, a full config, and
// what the documentation promises is accepted (zero means the default,
// metadata keys in any case, a nil option).
func TestServerInterceptorAcceptsGoodConfig(t *testing.T) {
	store := &countingStore{Store: memory.New(nil)}
	for _, cfg := range []oncegrpc.Config{
		{Scope: userScope},
		{
			Scope:             userScope,
			Required:          oncegrpc.Methods(chargeMethod),
			MaxStoredResponse: math.MaxInt,
			Options:           []once.Option{once.WithWait(time.Second), once.WithLease(time.Minute), nil},
			StoreMetadata:     []string{"X-Order-Id", "x-charge-id", "x.trace_id", "x-receipt-bin", "x-order-id"},
		},
	} {
		icpt, err := oncegrpc.ServerInterceptor(once.New(store), cfg)
		require.NoError(t, err)
		require.NotNil(t, icpt)
	}
	assert.Zero(t, store.calls, "ServerInterceptor sends nothing to the store")
}

// TestClientInterceptorRefusesBadConfig: a negative count or duration is
// refused with a *ConfigError naming the field; it was silently replaced
// by the default.
func TestClientInterceptorRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg   oncegrpc.ClientConfig
		field string
	}{
		{oncegrpc.ClientConfig{MaxAttempts: -1}, "MaxAttempts"},
		{oncegrpc.ClientConfig{MaxAttempts: math.MinInt}, "MaxAttempts"},
		{oncegrpc.ClientConfig{BaseBackoff: -time.Millisecond}, "BaseBackoff"},
		{oncegrpc.ClientConfig{MaxBackoff: -1}, "MaxBackoff"},
		{oncegrpc.ClientConfig{BaseBackoff: time.Second, MaxBackoff: math.MinInt64}, "MaxBackoff"},
		{oncegrpc.ClientConfig{MaxRetryDelay: -time.Second}, "MaxRetryDelay"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			var icpt any
			var err error
			require.NotPanics(t, func() { icpt, err = oncegrpc.ClientInterceptor(&tc.cfg) })
			var ce *oncegrpc.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field)
			assert.ErrorIs(t, err, oncegrpc.ErrInvalidConfig)
			assert.Nil(t, icpt)
		})
	}
}

// TestClientInterceptorAcceptsGoodConfig: nil and the zero config mean the
// defaults; the largest values are accepted too.
func TestClientInterceptorAcceptsGoodConfig(t *testing.T) {
	for _, cfg := range []*oncegrpc.ClientConfig{
		nil,
		{},
		{Methods: oncegrpc.Methods(chargeMethod), MaxAttempts: 1},
		{MaxAttempts: math.MaxInt, BaseBackoff: math.MaxInt64, MaxBackoff: math.MaxInt64, MaxRetryDelay: math.MaxInt64},
		{BaseBackoff: time.Second, MaxBackoff: time.Millisecond},
	} {
		icpt, err := oncegrpc.ClientInterceptor(cfg)
		require.NoError(t, err)
		require.NotNil(t, icpt)
	}
}

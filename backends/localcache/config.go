package localcache

import (
	"time"
)

// Defaults of a Config's zero fields.
const (
	DefaultTTL      = 10 * time.Second
	DefaultMaxBytes = 16 << 20
)

// Config bounds a local cache. A nil *Config means every default.
type Config struct {
	// MaxEntries bounds the number of cached records. Zero means no bound
	// but MaxBytes.
	MaxEntries int
	// MaxBytes bounds the bytes held by cached records (scope, key,
	// fingerprint, outcome and a fixed per-entry overhead); a record larger
	// than MaxBytes is not cached. It bounds as much again, separately,
	// the claims won through the cache that it remembers so that their
	// completion fills it (scope, key, fingerprint, owner token and the
	// same overhead each, from the won Claim until the claim is completed,
	// released, held or lost); a claim past it is not remembered, and its
	// completion is then not cached. Defaults to DefaultMaxBytes.
	MaxBytes int
	// TTL is the longest time a record stays cached, and so the longest
	// time the cache can answer from a record the store no longer holds
	// (see "What it can serve stale" in the package documentation).
	// Defaults to DefaultTTL.
	TTL time.Duration
	// Now is the cache's clock. Give it the store's clock when the store
	// runs on one of its own (memory.Config.Now in tests), so that entries
	// expire with the records. Defaults to time.Now.
	Now func() time.Time
}

// ConfigError reports a Config, or a store, that New cannot wrap.
type ConfigError struct {
	// Field is "MaxEntries", "MaxBytes", "TTL" or "store".
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return "localcache: " + e.Field + " " + e.Reason
}

// resolve returns cfg with its defaults applied, or why it is invalid.
func resolve(cfg *Config) (Config, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	switch {
	case c.MaxEntries < 0:
		return c, &ConfigError{Field: "MaxEntries", Reason: "is negative"}
	case c.MaxBytes < 0:
		return c, &ConfigError{Field: "MaxBytes", Reason: "is negative"}
	case c.TTL < 0:
		return c, &ConfigError{Field: "TTL", Reason: "is negative"}
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

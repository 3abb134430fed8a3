package redisstore

import (
	"bufio"
	"context"
	"fmt"
	"strings"
)

// EvictionCheck says what New does about a primary whose maxmemory-policy
// is not noeviction. Any other policy lets Redis delete records under
// memory pressure, and a deleted record is an absent key: a completed
// intent runs again, a live claim can be claimed twice.
type EvictionCheck uint8

const (
	// EvictionWarn logs a warning through Config.Logger and carries on.
	EvictionWarn EvictionCheck = iota
	// EvictionRefuse makes New fail with an *EvictionPolicyError.
	EvictionRefuse
	// EvictionIgnore skips the check (for servers that hide INFO, or
	// when records may be evicted knowingly).
	EvictionIgnore
)

// EvictionPolicyError reports a primary whose maxmemory-policy is not
// noeviction.
type EvictionPolicyError struct {
	// Addr is the primary's address, when known.
	Addr string
	// Policy is its maxmemory-policy.
	Policy string

	via string // names the server when Addr is unknown
}

// Error implements error.
func (e *EvictionPolicyError) Error() string {
	return fmt.Sprintf("once/redisstore: %s has maxmemory-policy %q; records can be evicted (set it to noeviction)",
		describe("redis", e.Addr, e.via), e.Policy)
}

// CheckEvictionPolicy reads maxmemory-policy (from INFO memory, which
// managed services that disable CONFIG still answer) on the server, or on
// every primary of a Cluster. It returns nil when all use noeviction, an
// *EvictionPolicyError for the first that does not, or an *Error when a
// server cannot be asked. (New reads the same
// field from the one INFO it sends each server.)
func (s *Store) CheckEvictionPolicy(ctx context.Context) error {
	return s.eachServer(ctx, "eviction check", func(ctx context.Context, sv server) error {
		info, err := sv.c.Info(ctx, "memory").Result()
		return evictionCheck(ctx, sv, info, err)
	})
}

// evictionCheck decides on the reply to INFO memory (info, or the error
// err).
func evictionCheck(ctx context.Context, sv server, info string, err error) error {
	const op = "eviction check"
	if err != nil {
		return translate(ctx, op, err)
	}
	policy, ok := infoField(info, "maxmemory_policy")
	if !ok {
		return corrupt(op, "INFO memory has no maxmemory_policy")
	}
	if policy != "noeviction" {
		return &EvictionPolicyError{Addr: sv.addr, Policy: policy, via: sv.via}
	}
	return nil
}

// evictionVerdict applies Config.EvictionPolicyCheck to the eviction
// check's err: under EvictionWarn an *EvictionPolicyError is logged, once
// per primary, and New carries on.
func (s *Store) evictionVerdict(ctx context.Context, err error) error {
	if e, ok := err.(*EvictionPolicyError); ok && s.check == EvictionWarn {
		addr := e.Addr
		if addr == "" {
			addr = e.via
		}
		s.logger.WarnContext(ctx, "once/redisstore: records can be evicted under memory pressure; set maxmemory-policy to noeviction",
			"addr", addr, "maxmemory-policy", e.Policy)
		return nil
	}
	return err
}

// infoField returns the value of name in an INFO reply.
func infoField(info, name string) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

package redisstore

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
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
}

// Error implements error.
func (e *EvictionPolicyError) Error() string {
	return fmt.Sprintf("once/redisstore: redis %s has maxmemory-policy %q; records can be evicted (set it to noeviction)", e.Addr, e.Policy)
}

// CheckEvictionPolicy reads maxmemory-policy (from INFO memory, which
// managed services that disable CONFIG still answer) on the server, or on
// every primary of a Cluster. It returns nil when all use noeviction, an
// *EvictionPolicyError for the first that does not, or an *Error when a
// server cannot be asked.
func (s *Store) CheckEvictionPolicy(ctx context.Context) error {
	check := func(ctx context.Context, c redis.UniversalClient, addr string) error {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			return translate(ctx, "eviction check", err)
		}
		policy, ok := infoField(info, "maxmemory_policy")
		if !ok {
			return corrupt("eviction check", "INFO memory has no maxmemory_policy")
		}
		if policy != "noeviction" {
			return &EvictionPolicyError{Addr: addr, Policy: policy}
		}
		return nil
	}
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return check(ctx, c, c.Options().Addr)
		})
		if _, ours := err.(*EvictionPolicyError); err != nil && !ours {
			if _, ours = err.(*Error); !ours {
				err = translate(ctx, "eviction check", err)
			}
		}
		return err
	}
	addr := ""
	if c, ok := s.client.(*redis.Client); ok {
		addr = c.Options().Addr
	}
	return check(ctx, s.client, addr)
}

func (s *Store) applyEvictionCheck(ctx context.Context) error {
	if s.check == EvictionIgnore {
		return nil
	}
	err := s.CheckEvictionPolicy(ctx)
	if e, ok := err.(*EvictionPolicyError); ok && s.check == EvictionWarn {
		s.logger.WarnContext(ctx, "once/redisstore: records can be evicted under memory pressure; set maxmemory-policy to noeviction",
			"addr", e.Addr, "maxmemory-policy", e.Policy)
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

package sqlitestore

import (
	"context"

	"github.com/stagedoor/once/backends"
)

// claimDecision is what Claim does with the row it read.
type claimDecision int

const (
	claimReport   claimDecision = iota // report the existing record (or a re-send as Claimed)
	claimInsert                        // the key is absent or expired: a new claim
	claimTakeover                      // a pending lease lapsed, fingerprints match
)

func decideClaim(r row, p backends.ClaimParams, now int64) (claimDecision, backends.ClaimResult) {
	switch {
	case !r.live(now):
		// Absent or expired: a new record, without checkpoints.
		return claimInsert, backends.ClaimResult{Claimed: true}
	case r.pendingBy(p.Owner, now):
		// A re-send of a Claim that applied: claimed, nothing changes.
		return claimReport, backends.ClaimResult{Claimed: true, Steps: r.steps}
	case r.state == 1 && r.leaseUntil.Int64 <= now && (!r.held() || r.holdUntil.Int64 <= now) &&
		backends.FingerprintMatches(r.fp, p.Fingerprint):
		// The takeover keeps the record's checkpoints.
		return claimTakeover, backends.ClaimResult{Claimed: true, TookOver: true, Steps: r.steps}
	}
	return claimReport, backends.ClaimResult{Existing: r.record(now)}
}

// Claim implements backends.Store. It first reads the row on a read
// connection; a replay, a duplicate and a mismatch end there, with no
// write lock and no write. Otherwise it reads the row again inside a BEGIN
// IMMEDIATE transaction on the writer and decides on what it reads there.
func (s *Store) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	return s.claim(ctx, s.pool(), p)
}

func (s *Store) claim(ctx context.Context, h on, p backends.ClaimParams) (backends.ClaimResult, error) {
	if err := checkWrite("claim", p.Scope, p.Key, p.Owner, p.Fingerprint); err != nil {
		return backends.ClaimResult{}, err
	}
	now := s.nowMicros()
	r, err := s.readWith(ctx, h.reader, "claim", s.sql.readClaim, p.Scope, p.Key, p.Owner, now)
	if err != nil {
		return backends.ClaimResult{}, err
	}
	if d, res := decideClaim(r, p, now); d == claimReport {
		return res, nil
	}
	var res backends.ClaimResult
	var d claimDecision
	err = s.writeIn(ctx, h, "claim", func(tx querier) error {
		now := s.nowMicros()
		r, err := s.readWith(ctx, tx, "claim", s.sql.readClaim, p.Scope, p.Key, p.Owner, now)
		if err != nil {
			return err
		}
		d, res = decideClaim(r, p, now)
		lease := deadline(now, p.Lease)
		expires := max(lease, deadline(now, p.Retention))
		switch d {
		case claimInsert:
			_, err = tx.ExecContext(ctx, s.sql.insert,
				p.Scope, p.Key, nonNil(p.Fingerprint), 1, p.Owner, 0, lease, nil, now, expires)
		case claimTakeover:
			_, err = tx.ExecContext(ctx, s.sql.takeover,
				nonNil(backends.BoundFingerprint(r.fp, p.Fingerprint)), p.Owner, lease, now, expires, p.Scope, p.Key)
		}
		return err
	})
	if err != nil {
		return backends.ClaimResult{}, err
	}
	if d == claimTakeover {
		s.watch.notify(p.Scope, p.Key)
	}
	return res, nil
}

// nonNil returns b, or an empty slice for nil, so that the driver stores
// an empty blob instead of NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

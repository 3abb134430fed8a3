package sqlitestore

import (
	"bytes"
	"context"

	"github.com/stagedoor/once/backends"
)

type resolveDecision int

const (
	resolveReport  resolveDecision = iota // report the existing record (or a re-send as Resolved)
	resolveInsert                         // absent or expired: store the outcome
	resolvePending                        // pending, fingerprints match: complete it
)

func decideResolve(r row, p backends.ResolveParams, now int64) (resolveDecision, backends.ResolveResult) {
	switch {
	case !r.live(now) && p.OnlyLeased:
		// Absent or expired: the next intent's key.
		return resolveReport, backends.ResolveResult{}
	case !r.live(now):
		return resolveInsert, backends.ResolveResult{Resolved: true}
	case p.OnlyLeased && r.state == 1 && !r.leasedBy(p.Owner):
		// Not a held record this token leased: another intent's, a
		// takeover's claim, or a hold nobody leased.
		return resolveReport, backends.ResolveResult{Existing: r.record(now)}
	case r.state == 1 && !r.held() && r.leaseUntil.Int64 > now:
		// A live claim: its owner is running.
		return resolveReport, backends.ResolveResult{Existing: r.record(now)}
	case r.state == 1 && backends.FingerprintMatches(r.fp, p.Fingerprint) &&
		(!r.held() || r.leaseUntil.Int64 <= now || r.owner.String == p.Owner):
		// Pending, or held without another token's live reconciler lease.
		return resolvePending, backends.ResolveResult{Resolved: true}
	case r.state == 2 && r.resolved && p.Owner != "" && r.owner.Valid && r.owner.String == p.Owner &&
		bytes.Equal(r.outcome, p.Outcome):
		// A re-send of a Resolve that applied.
		return resolveReport, backends.ResolveResult{Resolved: true}
	}
	return resolveReport, backends.ResolveResult{Existing: r.record(now)}
}

// Resolve implements backends.Store like Claim: a read first, then, when
// it writes, a read and a decision inside a BEGIN IMMEDIATE transaction.
func (s *Store) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	return s.resolve(ctx, s.pool(), p)
}

func (s *Store) resolve(ctx context.Context, h on, p backends.ResolveParams) (backends.ResolveResult, error) {
	if err := checkWrite("resolve", p.Scope, p.Key, p.Owner, p.Fingerprint); err != nil {
		return backends.ResolveResult{}, err
	}
	r, err := s.read(ctx, h.reader, "resolve", p.Scope, p.Key)
	if err != nil {
		return backends.ResolveResult{}, err
	}
	if d, res := decideResolve(r, p, s.nowMicros()); d == resolveReport {
		return res, nil
	}
	var res backends.ResolveResult
	var d resolveDecision
	err = s.writeIn(ctx, h, "resolve", func(tx querier) error {
		r, err := s.read(ctx, tx, "resolve", p.Scope, p.Key)
		if err != nil {
			return err
		}
		now := s.nowMicros()
		d, res = decideResolve(r, p, now)
		expires := deadline(now, p.Retention)
		switch d {
		case resolveInsert:
			_, err = tx.ExecContext(ctx, s.sql.insert,
				p.Scope, p.Key, nonNil(p.Fingerprint), 2, p.Owner, 1, nil, nonNil(p.Outcome), now, expires)
		case resolvePending:
			_, err = tx.ExecContext(ctx, s.sql.resolvePending,
				nonNil(backends.BoundFingerprint(r.fp, p.Fingerprint)), p.Owner, nonNil(p.Outcome), now, expires, p.Scope, p.Key)
		}
		return err
	})
	if err != nil {
		return backends.ResolveResult{}, err
	}
	if d != resolveReport {
		s.watch.notify(p.Scope, p.Key)
	}
	return res, nil
}

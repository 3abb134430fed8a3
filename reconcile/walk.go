package reconcile

import (
	"context"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// Pass examines at most Batch held keys, resuming where the previous
// Pass stopped, and settles those whose Check returns a settled
// verdict. It returns an error only when the store fails (the report
// says what was done until then), or, before anything, an
// *InvalidInputError (Field "ctx") for a nil ctx. A settled verdict is stored even when
// ctx ends after the Check answered: the Resolve is detached from
// ctx's cancellation (and bounded, as Do's completion is).
//
// A store error on a key ends the pass, and leaves the key free. Every
// lease Pass takes is ended before Pass returns: after the verdict (see
// Report.LeftHeld) or the resolution, and after a store error
// once its LeaseHeld was sent (when that LeaseHeld failed, the lease may
// have been taken, its reply lost) — with a write detached from ctx's
// cancellation, so that a pass stopped by its context does not strand
// the key for Lease either. Ending the lease after a store error is best
// effort: when it fails too (the store still down), that failure is added
// to the report's Errors and Pass returns the first error. A lease that
// could not be ended — or that may have been taken after it was ended (a
// LeaseHeld whose reply was lost, or that ctx cut off in flight) — lasts
// until Lease ends, or until this Job's next attempt at the key,
// which reuses the lease's owner and so takes it back: the owner is
// remembered even when ctx ended (the key is then not backed off), and
// such a key is forgotten only past maxKeptLeases of them.
//
// The next Pass resumes after the key whose store error (or panic) ended
// a pass, not at its page's start: it lists that page again (so that no
// key is asked with a stale record) and examines the keys of it that were
// not examined yet, those listed after the key first. So a key whose
// write keeps failing never blocks those after it, and the keys already
// asked in this walk are not asked again before the next walk.
// The key itself is backed off (see Report.Skipped), so that it
// does not end every pass that reaches it.
func (r *Job[T]) Pass(ctx context.Context) (Report, error) {
	var rep Report
	if err := validateContext(ctx); err != nil {
		return rep, err
	}
	relisted := len(r.rest) > 0
	if relisted {
		if err := r.relist(ctx); err != nil {
			return rep, err
		}
	}
	for rep.Examined < r.cfg.Batch {
		if len(r.rest) == 0 && !relisted {
			page, err := r.list(ctx, r.cursor, r.cfg.Batch-rep.Examined)
			if err != nil {
				return rep, err
			}
			r.pageCursor, r.seen, r.seenResolved = r.cursor, r.seen[:0], 0
			r.rest, r.cursor, r.last = page.Records, page.Next, page.Next == ""
		}
		relisted = false
		for len(r.rest) > 0 && rep.Examined < r.cfg.Batch {
			l := r.rest[0]
			r.rest = r.rest[1:] // first: a pass that a store error or panic ends resumes after l
			r.seen = append(r.seen, heldID{scope: l.Scope, key: l.Key})
			rep.Examined++
			resolved := rep.Resolved
			err := r.settle(ctx, l, &rep)
			if rep.Resolved > resolved {
				r.seenResolved++
			}
			if err != nil {
				rep.Done = len(r.rest) == 0 && r.last
				return rep, err
			}
		}
		if len(r.rest) == 0 && r.last {
			rep.Done = true
			return rep, nil
		}
	}
	return rep, nil
}

// list lists up to limit held keys from cursor.
func (r *Job[T]) list(ctx context.Context, cursor string, limit int) (backends.ListPage, error) {
	page, err := r.lister.List(ctx, backends.ListParams{
		State: backends.StateHeld, OlderThan: r.cfg.OlderThan, Scope: r.cfg.Scope,
		Cursor: cursor, Limit: limit,
	})
	if err != nil {
		return page, &once.StoreError{Op: "list", Err: err}
	}
	return page, nil
}

// relist lists again the page whose rest an earlier Pass left (a store
// error or panic ended it), from that page's cursor, and keeps the keys
// not examined yet: so that they are asked as they are now, not as they
// were when the earlier Pass listed them (a key settled meanwhile, or
// deleted and held again by a new intent, perhaps too recently for
// OlderThan, is not asked with its old record), and the keys already
// examined are not asked again in this walk. On a store error the rest is
// kept, for the next Pass to list again.
//
// It lists Batch keys more than the examined keys the store may still
// list as held: the keys this Job resolved are not counted, since
// the store no longer lists them (one a new intent held again since is
// left out all the same, and only takes room in the page, as a key held
// meanwhile does; a Pass whose page falls short lists more after it).
// Counting them would list more keys than the Pass examines, and the rest
// left over would make every later Pass of the walk list the page again,
// more of it each time.
func (r *Job[T]) relist(ctx context.Context) error {
	page, err := r.list(ctx, r.pageCursor, min(len(r.seen)-r.seenResolved+r.cfg.Batch, backends.MaxListLimit))
	if err != nil {
		return err
	}
	seen := make(map[heldID]bool, len(r.seen))
	for _, id := range r.seen {
		seen[id] = true
	}
	rest := make([]backends.Listed, 0, len(page.Records))
	for _, l := range page.Records {
		if !seen[heldID{scope: l.Scope, key: l.Key}] {
			rest = append(rest, l)
		}
	}
	r.rest, r.cursor, r.last = rest, page.Next, page.Next == ""
	return nil
}

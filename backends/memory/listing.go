package memory

import (
	"cmp"
	"slices"
)

// listing is the order in which List walks a shard's pending and held
// records (the shard's open listing), or its completed ones (its completed
// listing): the order in which they became so. A record keeps its place
// (its entry's seq) while it stays in its listing's states, and takes a
// new one, at the end, when it comes back to them; so a cursor is a place,
// and a page resumes from it with a binary search instead of a scan of
// the shard.
//
// A record that leaves its place (completed, released, expired, deleted,
// claimed again) leaves the place stale: the place is skipped on a walk
// (its record's seq is no longer its seq) and dropped by the next
// compaction, which runs once stale places outnumber the others, so each
// write pays O(1) on average. The shard's mutex guards the listing.
type listing struct {
	places []place // in increasing seq
	stale  int     // places whose record may have left them
}

// place is a record's position in a listing.
type place struct {
	seq uint64
	k   recordKey
}

// add gives k the place seq, above every place of l, and returns it.
func (l *listing) add(k recordKey, seq uint64) uint64 {
	l.places = append(l.places, place{seq: seq, k: k})
	return seq
}

// left notes that n records left their places, and compacts the listing
// when stale places outnumber the others. records must already show the
// change.
func (l *listing) left(n int, records map[recordKey]entry) {
	l.stale += n
	if l.stale <= 64 || 2*l.stale <= len(l.places) {
		return
	}
	kept := l.places[:0]
	for _, pl := range l.places {
		if pl.holds(records) {
			kept = append(kept, pl)
		}
	}
	clear(l.places[len(kept):]) // let the dropped keys be collected
	l.places, l.stale = kept, 0
	if cap(l.places) > 4*len(l.places)+1024 {
		l.places = slices.Clone(l.places) // give back what a burst took
	}
}

// holds reports whether pl is still its record's place.
func (pl place) holds(records map[recordKey]entry) bool {
	e, ok := records[pl.k]
	return ok && e.seq == pl.seq
}

// after returns the index of the first place whose seq is above seq.
func (l *listing) after(seq uint64) int {
	i, found := slices.BinarySearchFunc(l.places, seq, func(pl place, seq uint64) int { return cmp.Compare(pl.seq, seq) })
	if found {
		i++
	}
	return i
}

package redisstore

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// encodeRecord is the Go image of record.lua's encoders, for tests only:
// the store never writes records from Go.
func encodeRecord(r stored) string {
	head := string([]byte{'p'})
	tail := strconv.FormatInt(r.leaseEnd, 10)
	if r.hasSince {
		tail += " " + strconv.FormatInt(r.since, 10)
	}
	switch r.state {
	case backends.StateCompleted:
		head, tail = "c", string(r.outcome)
	case backends.StateHeld:
		head = "h"
		tail = strconv.FormatInt(r.leaseEnd, 10) + " " + strconv.FormatInt(r.since, 10) + " " +
			strconv.FormatInt(r.holdEnd, 10) + " " + strconv.Itoa(len(r.code)) + " " + r.code + r.message
	}
	return head + string([]byte{byte(len(r.fingerprint))}) + string(r.fingerprint) +
		string([]byte{byte(len(r.owner))}) + r.owner + tail
}

// FuzzDecodeRecord checks the one parser of stored records on arbitrary
// bytes: it never panics, rejects what it cannot read with ErrCorrupt, and
// whatever it accepts re-encodes to the very same bytes (so it accepts
// exactly the layout the scripts write), and converts to a Record without
// overflow.
func FuzzDecodeRecord(f *testing.F) {
	for _, seed := range []string{
		encodeRecord(stored{state: backends.StatePending, owner: "owner", leaseEnd: 1764547200000}),
		encodeRecord(stored{state: backends.StatePending, fingerprint: []byte("fp"), owner: "o", leaseEnd: math.MaxInt64}),
		encodeRecord(stored{state: backends.StateCompleted, fingerprint: make([]byte, 255), owner: "o", outcome: []byte("{}")}),
		encodeRecord(stored{state: backends.StateCompleted, outcome: []byte{}}),
		encodeRecord(stored{state: backends.StatePending, owner: "o", leaseEnd: 1764547200000, since: 1764547100000, hasSince: true}),
		encodeRecord(stored{state: backends.StateHeld, owner: "o", leaseEnd: 1, since: 2, hasSince: true, holdEnd: math.MaxInt64, code: "timeout", message: "no answer in 10 s"}),
		"h\x00\x001 2 3 9 ab", "h\x00\x001 2 3", "p\x00\x001 ",
		"", "p", "c\x00", "p\x00\x00", "p\x00\x00007", "p\x00\x00-1", "p\xff", "x\x00\x00", "c\x05ab",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := decodeRecord("fuzz", raw)
		if err != nil {
			require.True(t, errors.Is(err, ErrCorrupt), "a rejected record is ErrCorrupt: %v", err)
			return
		}
		require.Equal(t, raw, encodeRecord(r), "accepted bytes re-encode identically")
		require.LessOrEqual(t, len(r.fingerprint), 255)
		require.LessOrEqual(t, len(r.owner), 255)
		for _, now := range []int64{0, 1764547200000, math.MaxInt64, math.MinInt64 + 1} {
			rec := r.record(now)
			require.Equal(t, r.state, rec.State)
			if r.state != backends.StateCompleted {
				require.Equal(t, r.leaseEnd > now, rec.LeaseRemaining > 0, "no overflow flips the lease's sign")
			}
			if r.state == backends.StateHeld {
				require.Equal(t, r.holdEnd > now, rec.Held.Remaining > 0, "no overflow flips the hold's sign")
			}
		}
	})
}

func TestMillis(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{
		{-time.Second, 1}, {0, 1}, {1, 1}, {time.Millisecond, 1}, {time.Millisecond + 1, 2},
		{time.Hour, 3_600_000}, {MaxDuration, maxMillis}, {MaxDuration + 1, maxMillis}, {math.MaxInt64, maxMillis},
	} {
		require.Equal(t, c.want, millis(c.d), "millis(%d)", int64(c.d))
	}
	require.Equal(t, time.Duration(math.MaxInt64), duration(maxMillis+1))
	require.Equal(t, MaxDuration, duration(maxMillis))
	require.Equal(t, time.Duration(math.MinInt64), duration(math.MinInt64))
}

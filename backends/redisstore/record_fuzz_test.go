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

// encodeRecord is the Go image of record.lua's encoders, for tests; a
// pending record goes through appendPending, the encoder Claim uses.
func encodeRecord(r stored) string {
	if r.state == backends.StatePending {
		return string(appendPending(nil, r.owner, r.fingerprint, r.life, r.leaseTail))
	}
	head := "C"
	if r.state == backends.StateHeld {
		head = "H"
	}
	head += string([]byte{byte(len(r.owner))}) + r.owner + string([]byte{byte(len(r.fingerprint))}) + string(r.fingerprint)
	if r.state == backends.StateCompleted {
		return head + strconv.FormatInt(r.retention, 10) + " " + string(r.outcome)
	}
	return head + strconv.FormatInt(r.life, 10) + " " + strconv.FormatInt(r.leaseTail, 10) + " " +
		strconv.FormatInt(r.holdTail, 10) + " " + strconv.Itoa(len(r.code)) + " " + r.code + r.message
}

// FuzzDecodeRecord checks the one parser of stored records on arbitrary
// bytes: it never panics, rejects what it cannot read with ErrCorrupt,
// and whatever it accepts re-encodes
// to the very same bytes (so it accepts exactly the layout the scripts
// and Claim write), and converts to a Record at any TTL without overflow.
func FuzzDecodeRecord(f *testing.F) {
	for _, seed := range []string{
		encodeRecord(stored{state: backends.StatePending, owner: "owner", life: 3600000, leaseTail: 3540000}),
		encodeRecord(stored{state: backends.StatePending, fingerprint: []byte("fp"), owner: "o", life: maxMillis, leaseTail: 0}),
		encodeRecord(stored{state: backends.StateCompleted, fingerprint: make([]byte, 255), owner: "o", retention: 3600000, outcome: []byte("{}")}),
		encodeRecord(stored{state: backends.StateCompleted, retention: maxMillis, outcome: []byte{}}),
		encodeRecord(stored{state: backends.StateCompleted, fingerprint: []byte("a b"), owner: "o p", retention: 1, outcome: []byte(" x y ")}),
		"C\x00\x00", "C\x00\x00 x", "C\x00\x0001 x", "C\x00\x001x",
		encodeRecord(stored{state: backends.StateHeld, owner: "o", life: 1, leaseTail: 2, holdTail: 0, code: "timeout", message: "no answer in 10 s"}),
		encodeRecord(stored{state: backends.StateHeld, owner: "o", life: math.MaxInt64, leaseTail: math.MaxInt64, holdTail: math.MaxInt64}),
		"H\x00\x001 2 3 9 ab", "H\x00\x001 2 3", "P\x00\x001 ", "P\x00\x001", "P\x00\x00 1",
		"", "P", "C\x00", "P\x00\x00", "P\x00\x0007 1", "P\x00\x00-1 1", "P\xff", "x\x00\x00", "C\x05ab",
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
		for _, ttl := range []int64{0, 1, 3600000, maxMillis, math.MaxInt64} {
			rec := r.record(ttl)
			require.Equal(t, r.state, rec.State)
			if r.state == backends.StateCompleted {
				require.Equal(t, max(duration(min(ttl, r.retention)), time.Nanosecond), rec.ExpiresIn, "at most the retention")
				continue
			}
			require.Equal(t, ttl > r.leaseTail, rec.LeaseRemaining > 0, "no overflow flips the lease's sign")
			require.Equal(t, r.life >= ttl, rec.Age >= 0, "no overflow flips the age's sign")
			if r.state == backends.StateHeld {
				require.Equal(t, ttl > r.holdTail, rec.Held.Remaining > 0, "no overflow flips the hold's sign")
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

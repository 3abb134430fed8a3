package redisstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/internal/redislua"
)

// stepsExpiryLoop is a Lua chunk that runs a store script (run, defined
// before it) many times over a record with checkpoints, and counts the
// runs after which a live record's checkpoints do not expire at its very
// millisecond: deleted (PEXPIRETIME -2) or later. Each run starts from a
// pending record of owner 'o' whose lease has lapsed, and its checkpoints
// with the record's expiry, as checkpoint.lua writes them. The reply is
// {runs that applied (run returned 1, or a takeover's 2 or {2,
// checkpoints}), deleted, later}.
const stepsExpiryLoop = `
local n, applied, deleted, later = tonumber(ARGV[#ARGV]), 0, 0, 0
for _ = 1, n do
	redis.call('SET', KEYS[1], 'P' .. string.char(1) .. 'o' .. string.char(0) .. '60000 60000', 'PX', 60000)
	redis.call('SET', KEYS[2], 'steps', 'PXAT', redis.call('PEXPIRETIME', KEYS[1]))
	local r = run()
	if r == 1 or r == 2 or (type(r) == 'table' and r[1] == 2) then
		applied = applied + 1
	end
	local r = redis.call('PEXPIRETIME', KEYS[1])
	local s = redis.call('PEXPIRETIME', KEYS[2])
	if r >= 0 and s == -2 then
		deleted = deleted + 1
	elseif r ~= s then
		later = later + 1
	end
end
return {applied, deleted, later}
`

// TestTinyExpiryKeepsCheckpoints runs each script that gives a record
// with checkpoints a new expiry, with the tiniest one (1 ms), many times
// within scripts of its own, and checks that the checkpoints always get
// the record's very expiry. On Redis 7.0, PEXPIRE takes its base time and
// its "already expired" check from two readings of the clock: when a
// millisecond ends between them, PEXPIRE key 1 deletes the key, which
// left a live record without its checkpoints (the model test saw it:
// hold for 1 ms, then a lease that kept the record for hours).
func TestTinyExpiryKeepsCheckpoints(t *testing.T) {
	f := newStepsFixture(t)
	record, steps := f.keys("k")
	// Each script's ARGV for a 1 ms expiry over the loop's record (owner
	// 'o', lease lapsed); the loop's count goes last.
	cases := []struct {
		name, script string
		argv         []any
	}{
		{"Claim", redislua.Claim, []any{"p", "", 1, 1}},         // a takeover
		{"Complete", redislua.Complete, []any{"o", "v", 1, ""}}, // retention 1 ms
		{"Hold", redislua.Hold, []any{"o", 1, "c", "", 1, ""}},
		{"Resolve", redislua.Resolve, []any{"", "r", "v", 1, "", ""}},
	}
	const chunk, chunks = 5000, 5
	for _, c := range cases {
		script := "local function run()\n" + c.script + "\nend\n" + stepsExpiryLoop
		var runs, deleted, later int64
		for i := range chunks {
			v, err := f.c.Eval(t.Context(), script, []string{record, steps}, append(c.argv, chunk)...).Int64Slice()
			require.NoError(t, err, c.name)
			runs, deleted, later = runs+v[0], deleted+v[1], later+v[2]
			require.Equal(t, int64((i+1)*chunk), runs, "%s applies every time", c.name)
			if deleted+later > 0 {
				break
			}
		}
		require.Zero(t, deleted+later, "%s: after %d runs, the checkpoints of a live record were deleted %d times and expired later than it %d times",
			c.name, runs, deleted, later)
	}
}

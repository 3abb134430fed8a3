package pgsql

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRender(t *testing.T) {
	s := Render(`"s"."t"`)
	for name, text := range map[string]string{
		"takeover": s.Takeover, "complete": s.Complete, "renew": s.Renew, "release": s.Release,
		"resolve": s.Resolve, "sweep": s.Sweep, "get": s.Get, "delete": s.Delete, "insert claim": s.InsertClaim, "read claim": s.ReadClaim,
		"claim tx": s.ClaimTx, "checkpoint": s.Checkpoint,
	} {
		require.NotEmpty(t, text, name)
		require.NotContains(t, text, "{table}", name)
		require.NotContains(t, text, "{notify", name)
		require.Contains(t, text, `"s"."t"`, name)
		require.False(t, strings.Contains(text, "%["), "%s: no format verbs left", name)
	}
}

func TestChannelIsAShortLowerCaseIdentifier(t *testing.T) {
	long := `"` + strings.Repeat("s", 63) + `"."` + strings.Repeat("t", 48) + `"`
	for _, table := range []string{`"public"."once_records"`, long} {
		c := Channel(table)
		require.Len(t, c, 21)
		require.Regexp(t, `^once_[0-9a-f]{16}$`, c)
	}
	require.NotEqual(t, Channel(`"a"."b"`), Channel(`"a"."c"`))
}

// TestKeyHashIsSHA256 checks the allocation-free hash against SHA-256 of
// scope || 0x00 || key, for lengths on both sides of its stack buffer.
func TestKeyHashIsSHA256(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 600} {
		scope, key := strings.Repeat("s", n), strings.Repeat("k", 255)
		want := sha256.Sum256([]byte(scope + "\x00" + key))
		require.Equal(t, want, keyHash(scope, key), n)
		require.Equal(t, int(want[0]%Slots), Slot(scope, key), n)
		require.Equal(t, hex.EncodeToString(want[:8]), Payload(scope, key), n)
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = Slot("scope", "key") }), "Slot allocates nothing")
}

// TestCompletePassesTheSlot: the completion (and the hold) is notified
// through the slot its client computed ($6, $8), and hashes the key only
// for the payload.
func TestCompletePassesTheSlot(t *testing.T) {
	table := `"s"."t"`
	s := Render(table)
	require.Contains(t, s.Complete, "pg_try_advisory_xact_lock("+LockSpaceLiteral(table)+", $6::int)")
	require.Contains(t, s.Hold, "pg_try_advisory_xact_lock("+LockSpaceLiteral(table)+", $8::int)")
	require.Contains(t, s.Release, "pg_try_advisory_xact_lock("+LockSpaceLiteral(table)+", get_byte(")
}

func TestPayloadSeparatesScopeFromKey(t *testing.T) {
	require.Len(t, Payload("s", "k"), 16)
	require.NotEqual(t, Payload("ab", "c"), Payload("a", "bc"))
	require.Equal(t, Payload("s", "k"), Payload("s", "k"))
}

func TestWritesNotifyOnlyTheirKey(t *testing.T) {
	table := `"s"."t"`
	s := Render(table)
	for name, text := range map[string]string{"complete": s.Complete, "hold": s.Hold, "release": s.Release, "resolve": s.Resolve, "delete": s.Delete} {
		require.Contains(t, text, "pg_notify('"+Channel(table)+"'", name)
		require.Contains(t, text, "pg_try_advisory_xact_lock("+LockSpaceLiteral(table), name)
	}
	for name, text := range map[string]string{"insert claim": s.InsertClaim, "read claim": s.ReadClaim, "claim tx": s.ClaimTx, "takeover": s.Takeover, "renew": s.Renew, "sweep": s.Sweep, "get": s.Get} {
		require.NotContains(t, text, "pg_notify", name)
	}
	require.Regexp(t, `^'-?[0-9]+'::int4$`, LockSpaceLiteral(table))
}

// TestClaimTxIsInsertAndRead: claim_tx.sql inserts the row
// insert_claim.sql inserts and answers read_claim.sql's columns: their
// texts are the same, so that a change to one cannot leave the other
// behind.
func TestClaimTxIsInsertAndRead(t *testing.T) {
	part := func(name, text, from, to string) string {
		i := strings.Index(text, from)
		j := strings.Index(text[max(i, 0):], to)
		require.True(t, i >= 0 && j > 0, "%s has %q … %q", name, from, to)
		return strings.Join(strings.Fields(text[i:i+j]), " ")
	}
	insert := func(name, text string) string {
		return part(name, text, "INSERT INTO", "ON CONFLICT (scope, key) DO NOTHING")
	}
	// claim_tx.sql's insert is gated on its read having found nothing, at
	// READ COMMITTED.
	claimTx := strings.Replace(insert("claim_tx.sql", ClaimTx),
		" WHERE NOT EXISTS (SELECT 1 FROM e) OR current_setting('transaction_isolation') <> 'read committed'", "", 1)
	require.Equal(t, insert("insert_claim.sql", InsertClaim), claimTx)
	read := part("read_claim.sql", ReadClaim, "SELECT r.state", "FROM {table} r")
	// The owner is read_claim.sql's $3, claim_tx.sql's $4.
	read = strings.ReplaceAll(strings.ReplaceAll(read, "r.", "e."), "$3::", "$4::")
	require.Equal(t, read, part("claim_tx.sql", ClaimTx, "SELECT e.state, e.fingerprint, e.outcome", "FROM e"))
}

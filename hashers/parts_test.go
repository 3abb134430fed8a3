package hashers

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPartsLengthPrefixInjective(t *testing.T) {
	seqs := [][]string{
		{},
		{""},
		{"", ""},
		{"abc"},
		{"abc", ""},
		{"", "abc"},
		{"ab", "c"},
		{"a", "bc"},
		{"a", "b", "c"},
		{"\x00\x00\x00\x00\x00\x00\x00\x01a"},
		{"a\x00\x00\x00\x00\x00\x00\x00\x01b"},
		{"a", "b"},
	}
	seen := map[string][]string{}
	for _, s := range seqs {
		fp := Strings(s...)
		require.Len(t, fp, Size)
		if prev, ok := seen[string(fp)]; ok {
			t.Fatalf("Strings(%q) == Strings(%q)", s, prev)
		}
		seen[string(fp)] = s
	}
}

func TestPartsMatchesStringsAndFormat(t *testing.T) {
	parts := []string{"POST", "/orders", "", string(make([]byte, 200))}
	var bs [][]byte
	var manual []byte
	for _, p := range parts {
		bs = append(bs, []byte(p))
		manual = binary.BigEndian.AppendUint64(manual, uint64(len(p)))
		manual = append(manual, p...)
	}
	want := sha256.Sum256(manual)
	assert.Equal(t, want[:], []byte(Parts(bs...)), "documented format")
	assert.Equal(t, Parts(bs...), Strings(parts...))
	assert.Equal(t, Parts(nil), Parts([]byte{}), "nil part is an empty part")
	empty := sha256.Sum256(nil)
	assert.Equal(t, empty[:], []byte(Parts()))
}

func TestPartsDeterministic(t *testing.T) {
	a := Parts([]byte("order"), []byte("9b1e4d3a"))
	b := Parts([]byte("order"), []byte("9b1e4d3a"))
	assert.Equal(t, a, b)
	assert.Len(t, a, Size)
	// Pinned: the digest is stored for 24 h, so it must not change between
	// releases.
	assert.Equal(t, "43c5cdefea49f60dcf2a0d1394d1312f9b8e9aaed15d0a753c0e5671bbd3b724", hexString(a))
}

// TestPartsHaveNoTag pins what the package doc says: Parts and Strings
// hash exactly their parts, so they can give another hasher's digest.
func TestPartsHaveNoTag(t *testing.T) {
	doc := []byte(`{"b":1,"a":[2]}`)
	c := getCanon(doc)
	require.NoError(t, c.document())
	canon := string(c.out)
	putCanon(c)
	fp, err := JSON(doc)
	require.NoError(t, err)
	assert.Equal(t, fp, Strings(jsonTag, canon))
}

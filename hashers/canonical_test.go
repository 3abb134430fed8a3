package hashers

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nested returns depth objects, each holding inner under "a" and 0 under
// "b", with the keys out of order ({"b":0,"a":…}) or in order.
func nested(depth int, inner string, outOfOrder bool) []byte {
	var b bytes.Buffer
	for range depth {
		if outOfOrder {
			b.WriteString(`{"b":0,"a":`)
		} else {
			b.WriteString(`{"a":`)
		}
	}
	b.WriteString(inner)
	for range depth {
		if outOfOrder {
			b.WriteString(`}`)
		} else {
			b.WriteString(`,"b":0}`)
		}
	}
	return b.Bytes()
}

// canonical returns the canonical form of doc and the bytes its reordering
// pass copied.
func canonical(t *testing.T, doc []byte) (out []byte, copied int) {
	t.Helper()
	c := getCanon(doc)
	defer putCanon(c)
	require.NoError(t, c.document())
	return bytes.Clone(c.out), c.copied
}

// TestReorderCopiesEachByteOnce: putting the members of nested out-of-order
// objects in key order copies each byte of the canonical form once. Moving
// each object's members into place as it closed copied a value once per
// enclosing object: MaxDepth levels around a 64 KiB string copied 142 MB
// for a 76 KB canonical form (and 9999 levels around 1 MiB took 1.35 s).
func TestReorderCopiesEachByteOnce(t *testing.T) {
	inner := `"` + strings.Repeat("x", 64<<10) + `"`
	for _, depth := range []int{1, 2, 10, MaxDepth} {
		want, copied := canonical(t, nested(depth, inner, false))
		assert.Zero(t, copied, "depth %d: keys in order are not copied again", depth)

		got, copied := canonical(t, nested(depth, inner, true))
		assert.Equal(t, want, got, "depth %d: same canonical form whatever the key order", depth)
		assert.Equal(t, len(got), copied, "depth %d: each byte copied once", depth)
	}

	// Out-of-order objects under in-order ones and in arrays, and wide ones.
	var b strings.Builder
	b.WriteString(`[`)
	for i := range 300 {
		if i > 0 {
			b.WriteString(`,`)
		}
		b.WriteString(`{"a":{"z":[{"y":1,"x":2},` + inner[:100] + `"],"c":{"b":null,"a":true}},"b":[]}`)
	}
	b.WriteString(`]`)
	got, copied := canonical(t, []byte(b.String()))
	assert.Equal(t, len(got), copied)
	assert.Equal(t, mustJSON(t, b.String()), mustJSON(t, strings.NewReplacer(
		`{"y":1,"x":2}`, `{"x":2,"y":1}`, `{"b":null,"a":true}`, `{"a":true,"b":null}`,
	).Replace(b.String())))
}

// TestReorderErrors: an out-of-order object that turns out to have a
// duplicate key, or a document that fails after some objects were
// recorded, is an error and leaves nothing behind for the next use of the
// pooled parser.
func TestReorderErrors(t *testing.T) {
	for _, doc := range []string{
		`{"b":{"b":1,"a":2},"a":1,"b":2}`,
		`[{"b":1,"a":2},{"b":1,"a":2}`,
		`[{"b":1,"a":2}] x`,
	} {
		_, err := JSON([]byte(doc))
		assert.ErrorIs(t, err, ErrInvalidJSON, doc)
		got, _ := canonical(t, []byte(`{"a":[1,{"d":1,"c":2}]}`))
		assert.Equal(t, "ok\x01aad\x031E0ok\x01cd\x032E0k\x01dd\x031E0eee", string(got), doc)
	}
}

// TestPooledBytes: a parser whose buffers grew past maxPooled, including
// the records of reordered objects, is left to the garbage collector.
func TestPooledBytes(t *testing.T) {
	var c canon
	assert.Zero(t, c.pooledBytes())
	c.order = make([]int, 0, maxPooled/8+1)
	assert.Greater(t, c.pooledBytes(), maxPooled)
	c = canon{reord: make([]reordered, 0, maxPooled/32+1)}
	assert.Greater(t, c.pooledBytes(), maxPooled)
	c = canon{members: make([]member, 0, maxPooled/32+1)}
	assert.Greater(t, c.pooledBytes(), maxPooled)
	c = canon{tmp: make([]byte, 0, maxPooled+1)}
	assert.Greater(t, c.pooledBytes(), maxPooled)

	// A wide out-of-order object records one int per member.
	var b strings.Builder
	b.WriteString(`{`)
	for i := 20000; i > 0; i-- {
		if i < 20000 {
			b.WriteString(`,`)
		}
		b.WriteString(`"k` + strings.Repeat("0", 6-len(itoa(i))) + itoa(i) + `":1`)
	}
	b.WriteString(`}`)
	c2 := getCanon([]byte(b.String()))
	require.NoError(t, c2.document())
	assert.Equal(t, 20000, len(c2.order))
	assert.Greater(t, c2.pooledBytes(), maxPooled)
	putCanon(c2)
}

func itoa(i int) string {
	var s []byte
	for ; i > 0; i /= 10 {
		s = append([]byte{byte('0' + i%10)}, s...)
	}
	return string(s)
}

// TestMaxDepth: MaxDepth levels are accepted, one more is a *JSONError
// whose Reason says so, for JSON and Fields alike.
func TestMaxDepth(t *testing.T) {
	deep := func(n int) string { return strings.Repeat(`[`, n) + strings.Repeat(`]`, n) }
	mustJSON(t, deep(MaxDepth))
	mustJSON(t, string(nested(MaxDepth, "1", true)))
	_, err := Fields([]byte(`{"a":`+deep(MaxDepth-1)+`}`), "a")
	require.NoError(t, err)

	for _, doc := range []string{deep(MaxDepth + 1), string(nested(MaxDepth+1, "1", true)), `{"a":` + deep(MaxDepth) + `}`} {
		_, err := JSON([]byte(doc))
		var je *JSONError
		require.ErrorAs(t, err, &je)
		assert.Equal(t, "nesting too deep", je.Reason)
		_, err = Fields([]byte(doc), "a")
		assert.ErrorIs(t, err, ErrInvalidJSON)
	}
}

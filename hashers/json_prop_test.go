package hashers

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/require"
)

// The property test generates random JSON values as a model, writes each
// in many random but equivalent spellings (key order, whitespace, string
// escapes, number notation), applies random mutations, and checks that
// JSON's digests are equal exactly when the model says the values are.

// num is a model number: zero, or ±d1.d2…dn × 10^exp with d1, dn ≠ 0.
type num struct {
	neg    bool
	digits string // "" for zero
	exp    int
}

// obj is a model object.
type obj map[string]any

var runePool = []rune("abcxyzAZ09 _-.é€😀𝄞\"\\/\b\f\n\r\t\x00\x1f\u007f\u2028\ufeff")

func genValue(r *rand.Rand, depth int) any {
	k := r.IntN(10)
	if depth <= 0 && k >= 7 {
		k = r.IntN(7)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2, 3:
		return genString(r)
	case 4, 5, 6:
		return genNum(r)
	case 7, 8:
		a := make([]any, r.IntN(5))
		for i := range a {
			a[i] = genValue(r, depth-1)
		}
		return a
	default:
		o := obj{}
		for range r.IntN(6) {
			o[genString(r)] = genValue(r, depth-1)
		}
		return o
	}
}

func genString(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(6) {
		b.WriteRune(runePool[r.IntN(len(runePool))])
	}
	return b.String()
}

func genNum(r *rand.Rand) num {
	if r.IntN(8) == 0 {
		return num{}
	}
	n := 1 + r.IntN(25)
	d := []byte{byte('1' + r.IntN(9))}
	for i := 1; i < n; i++ {
		d = append(d, byte('0'+r.IntN(10)))
	}
	d[len(d)-1] = byte('1' + r.IntN(9))
	exp := r.IntN(30) - 15
	if r.IntN(10) == 0 {
		exp = r.IntN(2000) - 1000
	}
	return num{neg: r.IntN(2) == 0, digits: string(d), exp: exp}
}

// spell writes v as JSON with random formatting that keeps its value.
func spell(r *rand.Rand, b *strings.Builder, v any) {
	ws := func() {
		for range r.IntN(3) {
			b.WriteByte(" \t\n\r"[r.IntN(4)])
		}
	}
	ws()
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		spellString(r, b, v)
	case num:
		spellNum(r, b, v)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			spell(r, b, e)
		}
		ws()
		b.WriteByte(']')
	case obj:
		keys := slices.Collect(maps.Keys(v))
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			spellString(r, b, k)
			ws()
			b.WriteByte(':')
			spell(r, b, v[k])
		}
		ws()
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("model type %T", v))
	}
	ws()
}

func spellString(r *rand.Rand, b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, c := range s {
		short := map[rune]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '/': `\/`}
		mustEscape := c == '"' || c == '\\' || c < 0x20
		switch {
		case short[c] != "" && (mustEscape || r.IntN(2) == 0) && r.IntN(3) > 0:
			b.WriteString(short[c])
		case mustEscape || r.IntN(4) == 0:
			if c > 0xffff {
				c1, c2 := utf16.EncodeRune(c)
				fmt.Fprintf(b, `\u%04x\u%04X`, c1, c2)
			} else if r.IntN(2) == 0 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				fmt.Fprintf(b, `\u%04X`, c)
			}
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
}

func spellNum(r *rand.Rand, b *strings.Builder, n num) {
	if n.neg && (n.digits != "" || r.IntN(2) == 0) {
		b.WriteByte('-')
	}
	digits, exp := n.digits, n.exp
	if digits == "" {
		digits, exp = "0", r.IntN(20)-10
	}
	// s × 10^x with s = zeros ‖ digits ‖ zeros, then a decimal point.
	lead, trail := r.IntN(3), r.IntN(3)
	s := strings.Repeat("0", lead) + digits + strings.Repeat("0", trail)
	x := exp - (len(digits) - 1) - trail // value = s × 10^x
	p := 1 + r.IntN(len(s))              // digits before the point
	x += len(s) - p
	intPart := strings.TrimLeft(s[:p], "0")
	if intPart == "" {
		intPart = "0"
	}
	b.WriteString(intPart)
	if p < len(s) {
		b.WriteByte('.')
		b.WriteString(s[p:])
	}
	if x != 0 || r.IntN(3) == 0 {
		b.WriteByte("eE"[r.IntN(2)])
		switch {
		case x < 0:
			b.WriteByte('-')
		case r.IntN(2) == 0:
			b.WriteByte('+')
		}
		if r.IntN(4) == 0 {
			b.WriteString("00")
		}
		b.WriteString(strconv.Itoa(max(x, -x)))
	}
}

// equalModel reports whether two model values are the same JSON value.
func equalModel(a, b any) bool {
	switch a := a.(type) {
	case num:
		bn, ok := b.(num)
		if a.digits == "" {
			return ok && bn.digits == ""
		}
		return ok && a == bn
	case []any:
		bb, ok := b.([]any)
		return ok && slices.EqualFunc(a, bb, equalModel)
	case obj:
		bb, ok := b.(obj)
		if !ok || len(a) != len(bb) {
			return false
		}
		for k, v := range a {
			w, ok := bb[k]
			if !ok || !equalModel(v, w) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// mutate returns a copy of v with one random change somewhere in it. The
// change may happen to produce an equal value (swapping equal elements);
// the test asks equalModel, not the mutation, what to expect.
func mutate(r *rand.Rand, v any) any {
	switch v := v.(type) {
	case []any:
		if len(v) > 0 && r.IntN(2) == 0 {
			c := slices.Clone(v)
			i := r.IntN(len(c))
			c[i] = mutate(r, c[i])
			return c
		}
		c := slices.Clone(v)
		switch {
		case len(c) >= 2 && r.IntN(2) == 0:
			i, j := r.IntN(len(c)), r.IntN(len(c))
			c[i], c[j] = c[j], c[i]
		case len(c) >= 1 && r.IntN(2) == 0:
			i := r.IntN(len(c))
			c = slices.Delete(c, i, i+1)
		default:
			c = slices.Insert(c, r.IntN(len(c)+1), genValue(r, 1))
		}
		return c
	case obj:
		c := maps.Clone(v)
		keys := slices.Sorted(maps.Keys(c))
		if len(keys) > 0 && r.IntN(2) == 0 {
			k := keys[r.IntN(len(keys))]
			c[k] = mutate(r, c[k])
			return c
		}
		switch {
		case len(keys) > 0 && r.IntN(3) == 0:
			delete(c, keys[r.IntN(len(keys))])
		case len(keys) > 0 && r.IntN(2) == 0:
			k := keys[r.IntN(len(keys))]
			c[k+genString(r)+"k"] = c[k]
			delete(c, k)
		default:
			c[genString(r)] = genValue(r, 1)
		}
		return c
	case num:
		n := v
		switch r.IntN(4) {
		case 0:
			n.neg = !n.neg
		case 1:
			n.exp += 1 + r.IntN(3)
		case 2:
			if n.digits == "" {
				n.digits = "1"
			} else {
				n.digits += "1" // one more significant digit: 0.1 → 0.11
			}
		default:
			return genValue(r, 0)
		}
		return n
	case string:
		if r.IntN(2) == 0 {
			return v + string(runePool[r.IntN(len(runePool))])
		}
		return genValue(r, 0)
	case bool:
		if r.IntN(2) == 0 {
			return !v
		}
		return genValue(r, 0)
	default:
		return genValue(r, 1)
	}
}

func digestOf(t *testing.T, r *rand.Rand, v any) string {
	t.Helper()
	var b strings.Builder
	spell(r, &b, v)
	fp, err := JSON([]byte(b.String()))
	require.NoError(t, err, b.String())
	return string(fp)
}

func TestJSONProperties(t *testing.T) {
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 0x5e99a901ad37fd22))
		for range 250 {
			v := genValue(r, 4)
			want := digestOf(t, r, v)
			for range 3 {
				require.Equal(t, want, digestOf(t, r, v), "respelling changed the digest (seed %d)", seed)
			}
			for range 4 {
				m := mutate(r, v)
				got := digestOf(t, r, m)
				if equalModel(v, m) {
					require.Equal(t, want, got, "seed %d: %#v", seed, m)
				} else {
					require.NotEqual(t, want, got, "seed %d: mutation not detected:\n%#v\n%#v", seed, v, m)
				}
			}
		}
	}
}

package hashers

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendExponentMatchesBigInt checks the linear digit-string sum
// against math/big on random long exponents and adjustments, including the
// carries and borrows that change the number of digits.
func TestAppendExponentMatchesBigInt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := []func(n int) string{
		func(n int) string { return strings.Repeat("9", n) },                      // carry out of the top
		func(n int) string { return "1" + strings.Repeat("0", n-1) },              // borrow through zeros
		func(n int) string { return "1" + strings.Repeat("0", n-2) + "1" },        // borrow, one zero left
		func(n int) string { return strings.Repeat("0", 5) + randDigits(rng, n) }, // leading zeros
		func(n int) string { return randDigits(rng, n) },
	}
	adjs := []int64{0, 1, -1, 9, -9, 10, -10, math.MaxInt32, -math.MaxInt32, math.MaxInt64, -math.MaxInt64}
	for range 2000 {
		n := 19 + rng.IntN(40)
		digits := shapes[rng.IntN(len(shapes))](n)
		neg := rng.IntN(2) == 0
		adj := adjs[rng.IntN(len(adjs))]
		if rng.IntN(2) == 0 {
			adj = rng.Int64() >> rng.IntN(63)
			if rng.IntN(2) == 0 {
				adj = -adj
			}
		}
		want, ok := new(big.Int).SetString(digits, 10)
		require.True(t, ok)
		if neg {
			want.Neg(want)
		}
		want.Add(want, big.NewInt(adj))
		got := appendExponent([]byte("prefix"), []byte(digits), neg, adj)
		require.Equal(t, "prefix"+want.String(), string(got), "digits=%s neg=%v adj=%d", digits, neg, adj)
	}
}

// TestAppendExponentShortPath covers exponents that fit int64 arithmetic.
func TestAppendExponentShortPath(t *testing.T) {
	require.Equal(t, "-3", string(appendExponent(nil, []byte("000000000000000000000002"), true, -1)))
	require.Equal(t, "999999999999999999", string(appendExponent(nil, []byte("999999999999999998"), false, 1)))
}

func randDigits(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	b[0] = byte('1' + rng.IntN(9))
	for i := 1; i < n; i++ {
		b[i] = byte('0' + rng.IntN(10))
	}
	return string(b)
}

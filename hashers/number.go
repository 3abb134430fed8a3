package hashers

import (
	"encoding/binary"
	"math/big"
	"strconv"
)

// number parses the JSON number at c.pos and appends its canonical form:
// 'd' uvarint(len) text, where text is the number's exact decimal value in
// normalised scientific notation, [-]d[.ddd]E<exp>, with no leading or
// trailing zero digit, or "0" for zero (including -0). So 1, 1.0, 1e0 and
// 10e-1 all become "1E0", and 0.1 and 0.10000000000000001 stay apart. The
// exponent is computed exactly, in arbitrary precision when it has to be,
// and no digit is ever rounded: the cost is linear in the literal's length
// whatever its exponent (1e1000000000 is cheap).
func (c *canon) number() error {
	d := c.data
	i := c.pos
	neg := d[i] == '-'
	if neg {
		i++
	}
	intStart := i
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return c.errAt(i, "invalid number")
	}
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(d) && d[i] == '.' {
		i++
		fracStart = i
		for i < len(d) && isDigit(d[i]) {
			i++
		}
		if i == fracStart {
			return c.errAt(i, "invalid number")
		}
		fracEnd = i
	}
	expNeg := false
	expStart, expEnd := i, i
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			expNeg = d[i] == '-'
			i++
		}
		expStart = i
		for i < len(d) && isDigit(d[i]) {
			i++
		}
		if i == expStart {
			return c.errAt(i, "invalid number")
		}
		expEnd = i
	}
	c.pos = i

	// The significand's digits are int ‖ frac; the value is
	// digits × 10^(exp − len(frac)). Trim zeros off both ends of digits.
	intDigits, fracDigits := d[intStart:intEnd], d[fracStart:fracEnd]
	lead := 0 // leading zeros of int ‖ frac
	for lead < len(intDigits) && intDigits[lead] == '0' {
		lead++
	}
	if lead == len(intDigits) {
		for lead-len(intDigits) < len(fracDigits) && fracDigits[lead-len(intDigits)] == '0' {
			lead++
		}
	}
	total := len(intDigits) + len(fracDigits)
	if lead == total {
		c.out = append(c.out, tagNumber, 1, '0')
		return nil
	}
	trail := 0 // trailing zeros of int ‖ frac
	for trail < total-lead && digitAt(intDigits, fracDigits, total-1-trail) == '0' {
		trail++
	}
	sig := total - lead - trail // significant digits, ≥ 1
	// value = d1.d2…dn × 10^sciExp
	adj := int64(trail) - int64(len(fracDigits)) + int64(sig) - 1

	var expBuf [24]byte
	exp := appendExponent(expBuf[:0], d[expStart:expEnd], expNeg, adj)

	n := sig + len(exp) + 1 // digits, 'E', exponent
	if sig > 1 {
		n++ // '.'
	}
	if neg {
		n++
	}
	c.out = append(c.out, tagNumber)
	c.out = binary.AppendUvarint(c.out, uint64(n))
	if neg {
		c.out = append(c.out, '-')
	}
	for k := lead; k < lead+sig; k++ {
		if k == lead+1 {
			c.out = append(c.out, '.')
		}
		c.out = append(c.out, digitAt(intDigits, fracDigits, k))
	}
	c.out = append(c.out, 'E')
	c.out = append(c.out, exp...)
	return nil
}

func isDigit(ch byte) bool { return '0' <= ch && ch <= '9' }

// digitAt returns the k-th digit of int ‖ frac.
func digitAt(intDigits, fracDigits []byte, k int) byte {
	if k < len(intDigits) {
		return intDigits[k]
	}
	return fracDigits[k-len(intDigits)]
}

// appendExponent appends the decimal text of ±digits + adj. It uses int64
// arithmetic when the literal exponent has at most 18 significant digits
// (|adj| is bounded by the input length, so the sum cannot overflow) and
// math/big otherwise.
func appendExponent(dst, digits []byte, neg bool, adj int64) []byte {
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) <= 18 {
		var e int64
		for _, ch := range digits {
			e = e*10 + int64(ch-'0')
		}
		if neg {
			e = -e
		}
		return strconv.AppendInt(dst, e+adj, 10)
	}
	e, _ := new(big.Int).SetString(string(digits), 10)
	if neg {
		e.Neg(e)
	}
	e.Add(e, big.NewInt(adj))
	return e.Append(dst, 10)
}

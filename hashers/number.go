package hashers

import (
	"encoding/binary"
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
	c.out = append(c.out, digitAt(intDigits, fracDigits, lead))
	if sig > 1 {
		c.out = append(c.out, '.')
		c.out = appendDigits(c.out, intDigits, fracDigits, lead+1, lead+sig)
	}
	c.out = append(c.out, 'E')
	c.out = append(c.out, exp...)
	return nil
}

func isDigit(ch byte) bool { return '0' <= ch && ch <= '9' }

// appendDigits appends digits [from, to) of int ‖ frac, in bulk.
func appendDigits(dst, intDigits, fracDigits []byte, from, to int) []byte {
	if from < len(intDigits) {
		dst = append(dst, intDigits[from:min(to, len(intDigits))]...)
		from = len(intDigits)
	}
	if from < to {
		dst = append(dst, fracDigits[from-len(intDigits):to-len(intDigits)]...)
	}
	return dst
}

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
// otherwise adds adj to the digit string directly, in one right-to-left
// pass: the cost is linear in the exponent's length, however long it is
// (a conversion to binary and back, as math/big does, is superlinear).
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
	// |digits| ≥ 10^18 > |adj|, so the sum has the sign of ±digits and
	// its magnitude is digits + |adj| when adj has that sign, else
	// digits − |adj| (positive).
	mag := uint64(adj)
	if adj < 0 {
		mag = uint64(-adj)
	}
	subtract := (adj < 0) != neg
	if neg {
		dst = append(dst, '-')
	}
	return appendDecimalSum(dst, digits, mag, subtract)
}

// appendDecimalSum appends the decimal text of digits ± small, where digits
// is a decimal string without leading zeros and, when subtracting, greater
// than small. It touches each digit once.
func appendDecimalSum(dst, digits []byte, small uint64, subtract bool) []byte {
	start := len(dst)
	dst = append(dst, 0) // room for a carry out of the top digit
	dst = append(dst, digits...)
	out := dst[start:]
	var carry uint64 // carry (adding) or borrow (subtracting)
	for i := len(out) - 1; i >= 1 && (small > 0 || carry > 0); i-- {
		d := uint64(out[i] - '0')
		s := small % 10
		small /= 10
		if subtract {
			sub := s + carry
			if d >= sub {
				d, carry = d-sub, 0
			} else {
				d, carry = d+10-sub, 1
			}
		} else {
			d += s + carry
			carry = d / 10
			d %= 10
		}
		out[i] = byte('0' + d)
	}
	if carry > 0 && !subtract {
		out[0] = '1'
		return dst
	}
	// No carry out: drop the spare byte and any leading zeros a borrow
	// left behind (10…0 − 1 = 9…9).
	skip := 1
	for skip < len(out)-1 && out[skip] == '0' {
		skip++
	}
	n := copy(out, out[skip:])
	return dst[:start+n]
}

package rateheader

import "time"

// parseDecimal parses a non-negative decimal number of units ("30",
// "2.0", "0.25") into a duration no longer than max. Signs, exponents,
// a leading or trailing dot and anything beyond the digits are refused.
// Fraction digits below a nanosecond are dropped. The integer part is
// checked against max before it is multiplied, so no value can overflow.
func parseDecimal(s string, unit, max time.Duration) (time.Duration, bool) {
	intPart, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			intPart, frac = s[:i], s[i+1:]
			break
		}
	}
	if intPart == "" || (len(intPart) < len(s) && frac == "") {
		return 0, false
	}
	limit := int64(max / unit)
	var n int64
	for i := 0; i < len(intPart); i++ {
		c := intPart[i]
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > limit {
			return 0, false
		}
	}
	d := time.Duration(n) * unit
	// Each fraction digit is worth a tenth of the one before; scale
	// shrinks to zero within ten digits for a unit of a second or less.
	scale := unit / 10
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if !isDigit(c) {
			return 0, false
		}
		d += time.Duration(c-'0') * scale
		scale /= 10
	}
	if d > max {
		return 0, false
	}
	return d, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlpha(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

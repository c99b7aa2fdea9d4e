package rateheader

import (
	"strings"
	"unicode/utf8"
)

// This file holds a Structured Field Values parser (RFC 9651) for Lists,
// Dictionaries and Items: enough for the RateLimit fields, which are Lists
// of Items with Parameters (draft -08 and later), a Dictionary (draft -07)
// or single Items (drafts -00 to -06). It follows the parsing algorithms of
// RFC 9651 §4.2 and, as §4.2 requires, fails the whole field on any syntax
// error. Values the rate-limit fields never use (byte sequences, dates,
// display strings, inner lists) are checked for syntax and kept only as
// much as needed.

// maxFieldLen bounds the combined field value the parser reads. RFC 9651
// §4.2 lets a parser fail fields that exceed its limits; no rate-limit field
// comes near this size, so a longer one is garbage and is ignored.
const maxFieldLen = 16 << 10

// sfKind is the type of a bare item (RFC 9651 §3.3).
type sfKind uint8

const (
	sfInteger sfKind = iota + 1
	sfDecimal
	sfString
	sfToken
	sfBytes
	sfBoolean
	sfDate
	sfDisplay
	sfInnerList
)

// sfBare is a bare item. Integers and dates are in i, strings, tokens and
// the raw text of byte sequences and decimals in s, booleans in b.
type sfBare struct {
	kind sfKind
	i    int64
	s    string
	b    bool
}

// sfParam is one parameter of an item or inner list.
type sfParam struct {
	key string
	val sfBare
}

// sfItem is an item, or an inner list (kind sfInnerList), with its
// parameters.
type sfItem struct {
	sfBare
	params []sfParam
}

// param returns the value of the parameter key. On duplicate keys the last
// one wins (RFC 9651 §4.2.3.2: later values overwrite earlier ones).
func (it sfItem) param(key string) (sfBare, bool) {
	for i := len(it.params) - 1; i >= 0; i-- {
		if it.params[i].key == key {
			return it.params[i].val, true
		}
	}
	return sfBare{}, false
}

// sfMember is one member of a Dictionary.
type sfMember struct {
	key string
	sfItem
}

// sfParser is the state of one parse: the unread rest of the input.
type sfParser struct {
	s string
}

// joinField combines the field lines of one field as RFC 9651 §4.2
// requires (comma-separated, in order). It reports false when the field is
// absent or too long.
func joinField(values []string) (string, bool) {
	if len(values) == 0 {
		return "", false
	}
	v := strings.Join(values, ",")
	if len(v) > maxFieldLen {
		return "", false
	}
	return v, true
}

// parseList parses a List (RFC 9651 §4.2.1).
func parseList(field string) ([]sfItem, bool) {
	p := sfParser{s: strings.TrimLeft(field, " ")}
	var items []sfItem
	for p.s != "" {
		it, ok := p.itemOrInnerList()
		if !ok {
			return nil, false
		}
		items = append(items, it)
		p.skipOWS()
		if p.s == "" {
			return items, true
		}
		if p.s[0] != ',' {
			return nil, false
		}
		p.s = p.s[1:]
		p.skipOWS()
		if p.s == "" {
			return nil, false // a trailing comma
		}
	}
	return items, true
}

// parseDictionary parses a Dictionary (RFC 9651 §4.2.2).
func parseDictionary(field string) ([]sfMember, bool) {
	p := sfParser{s: strings.TrimLeft(field, " ")}
	var members []sfMember
	for p.s != "" {
		key, ok := p.key()
		if !ok {
			return nil, false
		}
		var it sfItem
		if p.s != "" && p.s[0] == '=' {
			p.s = p.s[1:]
			if it, ok = p.itemOrInnerList(); !ok {
				return nil, false
			}
		} else {
			it.sfBare = sfBare{kind: sfBoolean, b: true}
			if it.params, ok = p.parameters(); !ok {
				return nil, false
			}
		}
		members = setMember(members, sfMember{key: key, sfItem: it})
		p.skipOWS()
		if p.s == "" {
			return members, true
		}
		if p.s[0] != ',' {
			return nil, false
		}
		p.s = p.s[1:]
		p.skipOWS()
		if p.s == "" {
			return nil, false
		}
	}
	return members, true
}

// setMember overwrites the member with m's key, or appends m (RFC 9651
// §4.2.2: a later duplicate key overwrites the earlier value).
func setMember(ms []sfMember, m sfMember) []sfMember {
	for i := range ms {
		if ms[i].key == m.key {
			ms[i] = m
			return ms
		}
	}
	return append(ms, m)
}

// parseItem parses a single Item (RFC 9651 §4.2.3) that must span the
// whole field.
func parseItem(field string) (sfItem, bool) {
	p := sfParser{s: strings.Trim(field, " ")}
	it, ok := p.item()
	if !ok || p.s != "" {
		return sfItem{}, false
	}
	return it, true
}

// skipOWS drops optional whitespace (SP and HTAB) between list members.
func (p *sfParser) skipOWS() {
	p.s = strings.TrimLeft(p.s, " \t")
}

// itemOrInnerList parses a list member (RFC 9651 §4.2.1.1).
func (p *sfParser) itemOrInnerList() (sfItem, bool) {
	if p.s != "" && p.s[0] == '(' {
		return p.innerList()
	}
	return p.item()
}

// innerList parses an Inner List (RFC 9651 §4.2.1.2). Its items are
// checked and dropped: no rate-limit field uses one.
func (p *sfParser) innerList() (sfItem, bool) {
	p.s = p.s[1:]
	for {
		p.s = strings.TrimLeft(p.s, " ")
		if p.s == "" {
			return sfItem{}, false
		}
		if p.s[0] == ')' {
			p.s = p.s[1:]
			params, ok := p.parameters()
			return sfItem{sfBare: sfBare{kind: sfInnerList}, params: params}, ok
		}
		if _, ok := p.item(); !ok {
			return sfItem{}, false
		}
		if p.s == "" || (p.s[0] != ' ' && p.s[0] != ')') {
			return sfItem{}, false
		}
	}
}

// item parses a bare item and its parameters (RFC 9651 §4.2.3).
func (p *sfParser) item() (sfItem, bool) {
	b, ok := p.bareItem()
	if !ok {
		return sfItem{}, false
	}
	params, ok := p.parameters()
	return sfItem{sfBare: b, params: params}, ok
}

// parameters parses Parameters (RFC 9651 §4.2.3.2).
func (p *sfParser) parameters() ([]sfParam, bool) {
	var params []sfParam
	for p.s != "" && p.s[0] == ';' {
		p.s = strings.TrimLeft(p.s[1:], " ")
		key, ok := p.key()
		if !ok {
			return nil, false
		}
		val := sfBare{kind: sfBoolean, b: true}
		if p.s != "" && p.s[0] == '=' {
			p.s = p.s[1:]
			if val, ok = p.bareItem(); !ok {
				return nil, false
			}
		}
		params = append(params, sfParam{key: key, val: val})
	}
	return params, true
}

// key parses a Key (RFC 9651 §4.2.3.3): lcalpha or "*", then lcalpha,
// DIGIT, "_", "-", "." or "*".
func (p *sfParser) key() (string, bool) {
	if p.s == "" || !(isLower(p.s[0]) || p.s[0] == '*') {
		return "", false
	}
	n := 1
	for n < len(p.s) {
		c := p.s[n]
		if !isLower(c) && !isDigit(c) && c != '_' && c != '-' && c != '.' && c != '*' {
			break
		}
		n++
	}
	k := p.s[:n]
	p.s = p.s[n:]
	return k, true
}

// bareItem parses a Bare Item (RFC 9651 §4.2.3.1).
func (p *sfParser) bareItem() (sfBare, bool) {
	if p.s == "" {
		return sfBare{}, false
	}
	switch c := p.s[0]; {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		return p.str()
	case c == '*' || isAlpha(c):
		return p.token(), true
	case c == ':':
		return p.byteSequence()
	case c == '?':
		return p.boolean()
	case c == '@':
		p.s = p.s[1:]
		b, ok := p.number()
		if !ok || b.kind != sfInteger {
			return sfBare{}, false
		}
		b.kind = sfDate
		return b, true
	case c == '%':
		return p.displayString()
	default:
		return sfBare{}, false
	}
}

// number parses an Integer or a Decimal (RFC 9651 §4.2.4): at most 15
// digits for an integer, so it always fits an int64; at most 12 integer and
// 3 fraction digits for a decimal.
func (p *sfParser) number() (sfBare, bool) {
	s := p.s
	neg := s != "" && s[0] == '-'
	if neg {
		s = s[1:]
	}
	var (
		n       int // characters of s read, the dot included
		dot     = -1
		integer int64
	)
scan:
	for ; n < len(s); n++ {
		switch c := s[n]; {
		case isDigit(c):
			if dot < 0 {
				integer = integer*10 + int64(c-'0')
			}
		case c == '.' && dot < 0 && n > 0:
			if n > 12 {
				return sfBare{}, false
			}
			dot = n
		default:
			break scan
		}
		if (dot < 0 && n+1 > 15) || n+1 > 16 {
			return sfBare{}, false
		}
	}
	if n == 0 || (dot >= 0 && (n-dot-1 < 1 || n-dot-1 > 3)) {
		return sfBare{}, false
	}
	raw := p.s[:len(p.s)-len(s)+n]
	p.s = s[n:]
	if dot >= 0 {
		return sfBare{kind: sfDecimal, s: raw}, true
	}
	if neg {
		integer = -integer
	}
	return sfBare{kind: sfInteger, i: integer}, true
}

// str parses a String (RFC 9651 §4.2.5): printable ASCII, with "\" only
// escaping DQUOTE and "\".
func (p *sfParser) str() (sfBare, bool) {
	var b strings.Builder
	for i := 1; i < len(p.s); i++ {
		c := p.s[i]
		switch {
		case c == '\\':
			i++
			if i == len(p.s) || (p.s[i] != '"' && p.s[i] != '\\') {
				return sfBare{}, false
			}
			b.WriteByte(p.s[i])
		case c == '"':
			p.s = p.s[i+1:]
			return sfBare{kind: sfString, s: b.String()}, true
		case c < 0x20 || c > 0x7e:
			return sfBare{}, false
		default:
			b.WriteByte(c)
		}
	}
	return sfBare{}, false // unterminated
}

// token parses a Token (RFC 9651 §4.2.6); the first character was checked.
func (p *sfParser) token() sfBare {
	n := 1
	for n < len(p.s) && (isTchar(p.s[n]) || p.s[n] == ':' || p.s[n] == '/') {
		n++
	}
	t := p.s[:n]
	p.s = p.s[n:]
	return sfBare{kind: sfToken, s: t}
}

// byteSequence parses a Byte Sequence (RFC 9651 §4.2.7). The base64 text
// is checked for its alphabet and kept undecoded: the partition keys that
// use it are opaque to a client.
func (p *sfParser) byteSequence() (sfBare, bool) {
	end := strings.IndexByte(p.s[1:], ':')
	if end < 0 {
		return sfBare{}, false
	}
	raw := p.s[1 : 1+end]
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !isAlpha(c) && !isDigit(c) && c != '+' && c != '/' && c != '=' {
			return sfBare{}, false
		}
	}
	p.s = p.s[2+end:]
	return sfBare{kind: sfBytes, s: raw}, true
}

// boolean parses a Boolean (RFC 9651 §4.2.8).
func (p *sfParser) boolean() (sfBare, bool) {
	if len(p.s) < 2 || (p.s[1] != '0' && p.s[1] != '1') {
		return sfBare{}, false
	}
	b := p.s[1] == '1'
	p.s = p.s[2:]
	return sfBare{kind: sfBoolean, b: b}, true
}

// displayString parses a Display String (RFC 9651 §4.2.10): %"...", with
// non-ASCII bytes percent-encoded in lower-case hex and valid UTF-8 once
// decoded.
func (p *sfParser) displayString() (sfBare, bool) {
	if len(p.s) < 2 || p.s[1] != '"' {
		return sfBare{}, false
	}
	var b []byte
	for i := 2; i < len(p.s); i++ {
		c := p.s[i]
		switch {
		case c == '%':
			if i+2 >= len(p.s) || !isLowerHex(p.s[i+1]) || !isLowerHex(p.s[i+2]) {
				return sfBare{}, false
			}
			b = append(b, unhex(p.s[i+1])<<4|unhex(p.s[i+2]))
			i += 2
		case c == '"':
			if !utf8.Valid(b) {
				return sfBare{}, false
			}
			p.s = p.s[i+1:]
			return sfBare{kind: sfDisplay, s: string(b)}, true
		case c < 0x20 || c > 0x7e:
			return sfBare{}, false
		default:
			b = append(b, c)
		}
	}
	return sfBare{}, false
}

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isLower(c byte) bool    { return 'a' <= c && c <= 'z' }
func isAlpha(c byte) bool    { return isLower(c) || ('A' <= c && c <= 'Z') }
func isLowerHex(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'f') }

func unhex(c byte) byte {
	if isDigit(c) {
		return c - '0'
	}
	return c - 'a' + 10
}

// isTchar reports whether c is a tchar (RFC 9110 §5.6.2).
func isTchar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

package rateheader

import (
	"strings"

	"github.com/dunglas/httpsfv"
)

// This file reads Structured Field Values (RFC 9651) with
// github.com/dunglas/httpsfv, and keeps two guarantees around it: a field
// over maxFieldLen is ignored, and any syntax error fails the whole field
// (RFC 9651 §4.2), never one member of it.
//
// One case is handled here because the library gets it wrong: a Byte
// Sequence without its "=" padding, as in pk=:aGVsbG8:. RFC 9651 §4.2.7
// says parsers SHOULD NOT fail then; the library does, and would drop the
// whole RateLimit field over an opaque partition key. padByteSequences
// adds the padding before the library parses the field
// (TestUnpaddedByteSequenceIsAccepted).

// maxFieldLen bounds the combined field value the parser reads. RFC 9651
// §4.2 lets a parser fail fields that exceed its limits; no rate-limit field
// comes near this size, so a longer one is garbage and is ignored.
const maxFieldLen = 16 << 10

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
func parseList(field string) (httpsfv.List, bool) {
	l, err := httpsfv.UnmarshalList([]string{padByteSequences(field)})
	return l, err == nil
}

// parseDictionary parses a Dictionary (RFC 9651 §4.2.2).
func parseDictionary(field string) (*httpsfv.Dictionary, bool) {
	d, err := httpsfv.UnmarshalDictionary([]string{padByteSequences(field)})
	return d, err == nil
}

// parseItem parses a single Item (RFC 9651 §4.2.3) that must span the
// whole field.
func parseItem(field string) (httpsfv.Item, bool) {
	it, err := httpsfv.UnmarshalItem([]string{padByteSequences(field)})
	return it, err == nil
}

// item returns m when it is an Item; an Inner List is not one.
func item(m httpsfv.Member) (httpsfv.Item, bool) {
	it, ok := m.(httpsfv.Item)
	return it, ok
}

// param returns the value of it's parameter key. On duplicate keys the
// last one wins (RFC 9651 §4.2.3.2), as the library keeps it.
func param(it httpsfv.Item, key string) (any, bool) {
	if it.Params == nil {
		return nil, false
	}
	return it.Params.Get(key)
}

// name returns the text of a String or a Token, the two forms a policy
// name takes.
func name(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case httpsfv.Token:
		return string(s), true
	}
	return "", false
}

// padByteSequences returns field with "=" padding added to every Byte
// Sequence (RFC 9651 §3.3.5) whose base64 text lacks it, so that the
// library accepts what RFC 9651 §4.2.7 says a parser SHOULD NOT fail. A
// Byte Sequence opens with ":" where a bare item starts (a Token may hold
// ":" but never starts with it), outside Strings and Display Strings.
// Text that is not valid base64 once padded is left for the library to
// refuse; a field the library accepts as it is comes back unchanged
// (FuzzPadByteSequences).
func padByteSequences(field string) string {
	if strings.IndexByte(field, ':') < 0 {
		return field
	}
	var b strings.Builder
	for i := 0; i < len(field); i++ {
		switch c := field[i]; {
		case c == '"':
			// A String, or a Display String after "%": copied through its
			// closing quote. Only a String has backslash escapes.
			escapes := i == 0 || field[i-1] != '%'
			j := i + 1
			for ; j < len(field) && field[j] != '"'; j++ {
				if escapes && field[j] == '\\' {
					j++
				}
			}
			j = min(j, len(field)-1)
			b.WriteString(field[i : j+1])
			i = j
		case c == ':' && (i == 0 || strings.IndexByte("=,( \t", field[i-1]) >= 0):
			n := strings.IndexByte(field[i+1:], ':')
			if n < 0 {
				b.WriteString(field[i:])
				return b.String()
			}
			text := field[i+1 : i+1+n]
			b.WriteByte(':')
			b.WriteString(text)
			if !strings.Contains(text, "=") {
				switch len(text) % 4 {
				case 2:
					b.WriteString("==")
				case 3:
					b.WriteString("=")
				}
			}
			b.WriteByte(':')
			i += n + 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

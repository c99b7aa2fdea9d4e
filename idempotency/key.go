package idempotency

import (
	"fmt"
	"strings"
)

// DefaultMaxKeyLength is the longest idempotency key, in bytes after
// decoding, that the middleware accepts when Config.MaxKeyLength is zero.
// It fits a UUID, a ULID, and a "tenant:object:revision" triple with room to
// spare, while bounding what a client can make a store keep.
const DefaultMaxKeyLength = 255

// ParseKey decodes the field values of an Idempotency-Key header, as
// returned by http.Header.Values, into the key, and reports ErrMalformedKey
// (wrapped with the reason) when they cannot name one key.
//
// draft-ietf-httpapi-idempotency-key-header §2 defines the field as an
// Item Structured Header whose value is a String (RFC 9651 §3.3.3), so the
// canonical form is quoted: Idempotency-Key: "8e03978e-40d5-43e8". Many
// clients send the key unquoted, so a bare value is accepted too when it is
// made of token characters: RFC 9110 §5.6.2 tchar plus ':' and '/', which is
// the RFC 9651 §3.3.4 Token alphabet without its rule on the first
// character. A strict Structured Field parser would read an unquoted UUID
// such as 550e8400-e29b-41d4-a716-446655440000 as a malformed Integer; here
// it is the key the client meant. A quoted and an unquoted spelling of the
// same characters name the same key.
//
// Rejected, each as ErrMalformedKey:
//   - more than one field line, or a comma-separated list: a key is one
//     Item (RFC 9651 §3.3), and two keys cannot name one action;
//   - an empty key, or one longer than maxLen bytes after decoding
//     (maxLen <= 0 means DefaultMaxKeyLength);
//   - a String with an unterminated quote, a character outside %x20-7E, or
//     a backslash escape other than \" and \\ (RFC 9651 §4.2.5);
//   - Item parameters (";name=value", RFC 9651 §3.1.2): the draft defines
//     none, and a key followed by one is more likely a client bug than an
//     extension worth guessing at;
//   - anything after the value but optional whitespace.
//
// Leading and trailing spaces and tabs are ignored (RFC 9110 §5.6.3 OWS).
func ParseKey(values []string, maxLen int) (string, error) {
	if maxLen <= 0 {
		maxLen = DefaultMaxKeyLength
	}
	switch len(values) {
	case 0:
		return "", fmt.Errorf("%w: no value", ErrMalformedKey)
	case 1:
	default:
		return "", fmt.Errorf("%w: %d field lines; send one", ErrMalformedKey, len(values))
	}
	v := strings.Trim(values[0], " \t")
	// A quoted key of maxLen bytes takes at most 2*maxLen+2 with every
	// byte escaped; refusing longer input first bounds the parser's work.
	if len(v) > 2*maxLen+2 {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrMalformedKey, maxLen)
	}
	var key string
	var rest string
	var err error
	if strings.HasPrefix(v, `"`) {
		key, rest, err = parseString(v)
	} else {
		key, rest = parseBare(v)
	}
	if err != nil {
		return "", err
	}
	switch {
	case strings.HasPrefix(rest, ";"):
		return "", fmt.Errorf("%w: parameters are not accepted", ErrMalformedKey)
	case strings.HasPrefix(rest, ","):
		return "", fmt.Errorf("%w: a list of keys; send one", ErrMalformedKey)
	case rest != "":
		return "", fmt.Errorf("%w: unexpected %q after the key", ErrMalformedKey, rest[:1])
	case key == "":
		return "", fmt.Errorf("%w: empty", ErrMalformedKey)
	case len(key) > maxLen:
		return "", fmt.Errorf("%w: longer than %d bytes", ErrMalformedKey, maxLen)
	}
	return key, nil
}

// parseString parses an RFC 9651 §4.2.5 String at the start of v, which
// begins with a double quote, and returns its decoded value and the rest of
// v.
func parseString(v string) (key, rest string, err error) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			i++
			if i == len(v) {
				return "", "", fmt.Errorf("%w: unterminated escape", ErrMalformedKey)
			}
			if v[i] != '"' && v[i] != '\\' {
				return "", "", fmt.Errorf("%w: invalid escape \\%c", ErrMalformedKey, v[i])
			}
			b.WriteByte(v[i])
		case c == '"':
			return b.String(), v[i+1:], nil
		case c < 0x20 || c > 0x7e:
			return "", "", fmt.Errorf("%w: byte %#02x is not visible ASCII", ErrMalformedKey, c)
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("%w: unterminated string", ErrMalformedKey)
}

// parseBare returns the run of key characters at the start of v and the
// rest of v.
func parseBare(v string) (key, rest string) {
	i := 0
	for i < len(v) && isKeyChar(v[i]) {
		i++
	}
	return v[:i], v[i:]
}

// isKeyChar reports whether c may appear in an unquoted key: an RFC 9110
// §5.6.2 tchar, ':' or '/'.
func isKeyChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}

package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Fingerprint returns the hex SHA-256 of a request's canonical form. Two
// requests under one action key must have the same fingerprint, or the
// second is a conflict. Stores never keep it bare: they seal it under
// Config.FingerprintKeys (see FingerprintKeys), since a bare hash over a
// body with a card number can be reversed by guessing.
//
// Exactly these count, each written as "<byte length>:<bytes>\n" so no
// field can run into the next:
//
//  1. the version tag "ledger-fingerprint-v1";
//  2. the method, upper-cased;
//  3. the escaped URL path (URL.EscapedPath), "/" when empty;
//  4. the query: parsed, keys sorted, each key's values in the order sent,
//     re-encoded (url.Values.Encode), so "b=1&a=2" equals "a=2&b=1" but
//     "a=1&a=2" differs from "a=2&a=1". A query that does not parse is
//     used raw, prefixed with "!";
//  5. for each name in headerNames, lower-cased, deduplicated and sorted:
//     the name, the number of values, then each value in order. A named
//     header that is absent counts as zero values. Authorization,
//     Proxy-Authorization and Cookie never count, even if named: rotating
//     a credential must not turn a retry into a conflict, and a hash of a
//     short secret is not safe to store;
//  6. the hex SHA-256 of the body (nil and empty are the same).
//
// Scheme, host, fragment, user info and every header not named do not
// count: the destination belongs in the Key, not in the fingerprint. A nil
// u counts as path "/" with no query.
func Fingerprint(method string, u *url.URL, h http.Header, headerNames []string, body []byte) string {
	// The canonical form is built in one buffer, on the stack unless it
	// outgrows it, and hashed once.
	form := make([]byte, 0, 512)
	form = appendField(form, "ledger-fingerprint-v1")
	form = appendField(form, strings.ToUpper(method))

	path, query := "/", ""
	if u != nil {
		if p := u.EscapedPath(); p != "" {
			path = p
		}
		if v, err := url.ParseQuery(u.RawQuery); err == nil {
			query = v.Encode()
		} else {
			query = "!" + u.RawQuery
		}
	}
	form = appendField(form, path)
	form = appendField(form, query)

	names := make([]string, 0, len(headerNames))
	for _, n := range headerNames {
		n = strings.ToLower(n)
		switch n {
		case "authorization", "proxy-authorization", "cookie":
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for _, n := range names {
		vs := h.Values(n) // Values canonicalises the name
		form = appendField(form, n)
		form = appendField(form, strconv.Itoa(len(vs)))
		for _, v := range vs {
			form = appendField(form, v)
		}
	}

	b := sha256.Sum256(body)
	var bodyHex [2 * sha256.Size]byte
	hex.Encode(bodyHex[:], b[:])
	form = appendField(form, bodyHex[:])
	sum := sha256.Sum256(form)
	return hex.EncodeToString(sum[:])
}

// appendField appends one length-prefixed field of the canonical form,
// "<byte length>:<bytes>\n", to form.
func appendField[T string | []byte](form []byte, s T) []byte {
	form = strconv.AppendInt(form, int64(len(s)), 10)
	form = append(form, ':')
	form = append(form, s...)
	return append(form, '\n')
}

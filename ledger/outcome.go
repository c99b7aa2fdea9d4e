package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/textproto"
	"slices"
)

// DefaultMaxBody is the largest response body a store keeps when
// Config.MaxBody is zero: 64 KiB. Longer bodies are kept only as a hash.
const DefaultMaxBody = 64 << 10

// Outcome is the stored result of a completed action: what a replay
// returns.
type Outcome struct {
	// Status is the HTTP status code.
	Status int
	// Header is the safe subset of the response headers. Stores keep only
	// the names listed under Config.Headers, and never Authorization,
	// Proxy-Authorization, Cookie or Set-Cookie.
	Header http.Header
	// Body is the response body, or nil when BodyOmitted.
	Body []byte
	// BodyHash is the hex SHA-256 of the whole body. Stores compute it from
	// Body unless BodyOmitted was already set by the caller.
	BodyHash string
	// BodyLen is the length of the whole body in bytes.
	BodyLen int64
	// BodyOmitted reports that the body was longer than the store's cap and
	// only BodyHash and BodyLen were kept. A caller that hashed a large body
	// while streaming it may set BodyOmitted, BodyHash and BodyLen itself;
	// the store then keeps them as given.
	BodyOmitted bool
	// AttemptClass, when not empty, is the class of the send this outcome
	// answers, recorded by Complete in the action's history in the same
	// atomic step, exactly as AddAttempt(ctx, k, token, AttemptClass)
	// would record it, settle time included; a store that does so says
	// Reservation.SettlesAttempt. It is not part of the stored outcome: a
	// replay's Outcome has it empty. Empty records no send.
	AttemptClass string
}

// clone returns a deep copy, so a store's caller cannot alias its state.
func (o *Outcome) clone() *Outcome {
	if o == nil {
		return nil
	}
	c := *o
	c.Header = o.Header.Clone()
	c.Body = bytes.Clone(o.Body)
	return &c
}

// neverStored lists the headers no Outcome keeps, whatever Config says:
// credentials sent or set by either side.
func neverStored(canonical string) bool {
	switch canonical {
	case "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie":
		return true
	}
	return false
}

// defaultHeaders are the response headers kept when Config.Headers is
// nil: what a replay needs to look like the original, and nothing that
// identifies a session.
func defaultHeaders() []string {
	return []string{
		"Content-Type", "Content-Encoding", "Content-Language",
		"Location", "Etag", "Last-Modified", "Retry-After",
		"Idempotency-Key", "Request-Id", "X-Request-Id",
	}
}

// storedOutcome returns the Outcome a store persists: headers filtered,
// body capped and hashed.
func (c Config) storedOutcome(o Outcome) *Outcome {
	s := &Outcome{Status: o.Status, Header: http.Header{}}
	names := c.Headers
	if names == nil {
		names = defaultHeaders()
	}
	for _, n := range names {
		n = textproto.CanonicalMIMEHeaderKey(n)
		if vs, ok := o.Header[n]; ok && !neverStored(n) {
			s.Header[n] = slices.Clone(vs)
		}
	}
	if o.BodyOmitted {
		s.BodyOmitted, s.BodyHash, s.BodyLen = true, o.BodyHash, o.BodyLen
		return s
	}
	sum := sha256.Sum256(o.Body)
	s.BodyHash, s.BodyLen = hex.EncodeToString(sum[:]), int64(len(o.Body))
	if len(o.Body) > c.maxBody() {
		s.BodyOmitted = true
		return s
	}
	s.Body = bytes.Clone(o.Body)
	return s
}

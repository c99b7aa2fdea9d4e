package idempotency

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"

	"github.com/retrybudget/retrybudget/ledger"
)

// Headers the middleware adds to a replayed response.
const (
	// HeaderReplayed is set to "true" on every replayed response, so a
	// client can tell the stored answer of an earlier request from a fresh
	// one (the name Stripe and others use).
	HeaderReplayed = "Idempotent-Replayed"
	// HeaderBodyOmitted is set to "true" on a replay whose stored body was
	// too large to keep (Config.MaxResponseBody): the status and stored
	// headers are replayed, the body is empty, and Repr-Digest carries the
	// SHA-256 of the original body (RFC 9530 §3) so a client holding it can
	// check it.
	HeaderBodyOmitted = "Idempotent-Body-Omitted"
)

// writeReplay sends a completed action's stored response.
//
// A stored body is sent whole. A body that was stored only as a hash is
// never sent truncated: the original status and stored headers go out
// (Location and ETag still lead to the resource) with an empty body,
// HeaderBodyOmitted and Repr-Digest, and without Content-Type,
// Content-Encoding and Content-Language, which would describe content that
// is not there. The status is kept rather than turned into an error on
// purpose: a client told "error" about a request that succeeded tends to
// retry it under a new key, which repeats the effect.
func writeReplay(w http.ResponseWriter, o *ledger.Outcome) {
	h := w.Header()
	for n, vs := range o.Header {
		h[n] = slices.Clone(vs)
	}
	h.Set(HeaderReplayed, "true")
	h.Del("Content-Length")
	if !o.BodyOmitted {
		h.Set("Content-Length", strconv.Itoa(len(o.Body)))
		w.WriteHeader(o.Status)
		if bodyAllowed(o.Status) && len(o.Body) > 0 {
			_, _ = w.Write(o.Body)
		}
		return
	}
	h.Del("Content-Type")
	h.Del("Content-Encoding")
	h.Del("Content-Language")
	h.Set(HeaderBodyOmitted, "true")
	if sum, err := hex.DecodeString(o.BodyHash); err == nil && len(sum) == 32 {
		h.Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(sum)+":")
	}
	if bodyAllowed(o.Status) {
		h.Set("Content-Length", "0")
	}
	w.WriteHeader(o.Status)
}

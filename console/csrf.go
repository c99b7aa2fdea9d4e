package console

import (
	"crypto/subtle"
	"net/http"
)

// csrfToken is the token every form carries: an HMAC of the session under
// the Handler's secret, so a page of another site can neither read nor
// compute it (the synchronizer token pattern; OWASP's CSRF cheat sheet).
func (h *handler) csrfToken(session string) string { return h.mac("csrf", session) }

// csrfChecked refuses, with 403, a POST whose form lacks the session's
// CSRF token, comparing in constant time.
func (h *handler) csrfChecked(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		want := h.csrfToken(operatorOf(r).session)
		if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(want)) != 1 {
			h.message(w, r, http.StatusForbidden, "Refused", "The form's CSRF token is missing or wrong: reload the page and try again.")
			return
		}
		next(w, r)
	}
}

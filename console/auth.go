package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// sessionCookie names the cookie a signed-in browser holds: an HMAC of the
// token under the Handler's secret, never the token itself, so a leaked
// cookie dies with the process and tells nothing about the token.
const sessionCookie = "retrybudget_console"

type operatorKey struct{}

// mac returns the HMAC-SHA256 of the parts under the Handler's secret.
func (h *handler) mac(parts ...string) string {
	m := hmac.New(sha256.New, h.secret)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// tokenMatches compares given with Config.Token in constant time. It
// compares their HMACs, which have one length, so that not even the
// token's length leaks through timing.
func (h *handler) tokenMatches(given string) bool {
	return subtle.ConstantTimeCompare([]byte(h.mac("token", given)), []byte(h.mac("token", h.cfg.Token))) == 1
}

func (h *handler) session() string { return h.mac("session", h.cfg.Token) }

// operator identifies r's operator: by Config.Authenticate, or by the
// session cookie or a bearer token matching Config.Token. The session
// string it returns is what CSRF tokens are bound to.
func (h *handler) operator(r *http.Request) (op Operator, session string, ok bool) {
	if h.cfg.Authenticate != nil {
		op, err := h.cfg.Authenticate(r)
		if err != nil {
			return Operator{}, "", false
		}
		return op, "op:" + op.Name, true
	}
	if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
		if h.tokenMatches(bearer) {
			return Operator{}, h.session(), true
		}
		return Operator{}, "", false
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		if subtle.ConstantTimeCompare([]byte(c.Value), []byte(h.session())) == 1 {
			return Operator{}, h.session(), true
		}
	}
	return Operator{}, "", false
}

// authed refuses requests without an operator: 401 with the login page
// under Token, a bare 401 under Authenticate.
func (h *handler) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		op, session, ok := h.operator(r)
		if !ok {
			if h.cfg.Authenticate != nil {
				h.message(w, r, http.StatusUnauthorized, "Not signed in", "The console could not identify you.")
				return
			}
			h.render(w, http.StatusUnauthorized, "login.html", map[string]any{"Base": base(r)})
			return
		}
		ctx := context.WithValue(r.Context(), operatorKey{}, signedIn{op, session})
		next(w, r.WithContext(ctx))
	}
}

type signedIn struct {
	Operator
	session string
}

func operatorOf(r *http.Request) signedIn {
	s, _ := r.Context().Value(operatorKey{}).(signedIn)
	return s
}

func (h *handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Authenticate != nil {
		http.NotFound(w, r)
		return
	}
	h.render(w, http.StatusOK, "login.html", map[string]any{"Base": base(r)})
}

// login exchanges the token for a session cookie. It needs no CSRF token:
// it carries the operator token itself, which a forging site does not
// have.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Authenticate != nil {
		http.NotFound(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if !h.tokenMatches(r.PostFormValue("token")) {
		h.render(w, http.StatusUnauthorized, "login.html", map[string]any{"Base": base(r), "Failed": true})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: h.session(), HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	// Set by hand: http.Redirect would make it absolute from the path
	// under any http.StripPrefix, losing the prefix.
	w.Header().Set("Location", base(r))
	w.WriteHeader(http.StatusSeeOther)
}

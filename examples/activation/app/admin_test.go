package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The ledger's records are an operator's to read: a tenant's token gets
// 401 on every /admin route, its own records included; the operator's
// token reads any tenant's.
func TestAdminNeedsAnOperatorToken(t *testing.T) {
	f := newFixture(t)
	if w := f.post(seedKey, seedBody); w.Code != http.StatusCreated {
		t.Fatalf("seed: %d %s", w.Code, w.Body)
	}
	get := func(path, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		f.app.ServeHTTP(w, r)
		return w
	}
	own := "/admin/tenants/tenant_a/actions/" + seedKey
	for _, path := range []string{own, "/admin/stuck"} {
		for _, token := range []string{"token_a", "token_b", ""} {
			if w := get(path, token); w.Code != http.StatusUnauthorized {
				t.Errorf("GET %s with %q: %d; want 401", path, token, w.Code)
			}
		}
	}
	if w := get(own, "token_ops"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"state":"completed"`) {
		t.Errorf("operator: %d %s", w.Code, w.Body)
	}
	// And the operator's token is no tenant: it cannot activate.
	r := httptest.NewRequest(http.MethodPost, "/api/v1/campaign-activations", strings.NewReader(seedBody))
	r.Header.Set("Authorization", "Bearer token_ops")
	r.Header.Set("Idempotency-Key", "k-ops")
	w := httptest.NewRecorder()
	f.app.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("operator token on the API: %d; want 401", w.Code)
	}
}

// A tenant chooses audience_id, which goes into the destination's URL
// path: anything but a plain name is refused before any call, so "../"
// cannot reach another endpoint.
func TestAudienceIDCannotChooseTheDestinationPath(t *testing.T) {
	f := newFixture(t)
	for i, audience := range []string{"../../admin", "a/b", "a?x=1", "a%2Fb", strings.Repeat("a", 65), "ümlaut"} {
		body := `{"campaign_id":"c","revision":1,"audience_id":` + quote(audience) + `}`
		w := f.post("k-aud-"+string(rune('a'+i)), body)
		if w.Code != http.StatusUnprocessableEntity {
			t.Errorf("audience %q: %d %s; want 422", audience, w.Code, w.Body)
		}
	}
	if st := f.dest.Stats(); st.Requests != 0 {
		t.Fatalf("destination saw %d requests; want none", st.Requests)
	}
}

// quote returns s as a JSON string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

package console

import (
	"crypto/rand"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

//go:embed templates/*.html
var templateFS embed.FS

// handler serves the console. It keeps no state that requests change:
// sessions and CSRF tokens are HMACs under secret, so nothing grows with
// the number of operators or requests.
type handler struct {
	cfg    Config
	secret []byte // drawn per Handler: sessions, CSRF tokens and references die with it
	tmpl   *template.Template
	mux    *http.ServeMux
	now    func() time.Time // the clock seam for the settle time and ages
}

// New returns the console's http.Handler over cfg.Store. It may be
// mounted under a prefix with http.StripPrefix: every link it renders is
// relative. It fails with an error wrapping ErrConfig, naming the fields,
// when Store or both Token and Authenticate are missing.
func New(cfg Config) (http.Handler, error) {
	return newHandler(cfg, time.Now)
}

func newHandler(cfg Config, now func() time.Time) (*handler, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: console.Config.Store is required: set it to the service's ledger store, such as the one ledger.NewRedis or pgledger.New returned", ErrConfig)
	}
	if cfg.Token == "" && cfg.Authenticate == nil {
		return nil, fmt.Errorf("%w: one of console.Config.Token and console.Config.Authenticate is required: set Token to os.Getenv(\"RETRYBUDGET_CONSOLE_TOKEN\"), a secret made with openssl rand -base64 32, or Authenticate to the service's own operator check", ErrConfig)
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = defaultPageSize
	}
	if cfg.MaxScan <= 0 {
		cfg.MaxScan = defaultMaxScan
	}
	if cfg.Lease <= 0 {
		cfg.Lease = ledger.DefaultLease
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	h := &handler{cfg: cfg, secret: make([]byte, 32), now: now}
	_, _ = rand.Read(h.secret) // never fails (crypto/rand)
	t, err := template.New("").Funcs(template.FuncMap{
		"age":  func(d time.Duration) string { return d.Round(time.Second).String() },
		"when": func(t time.Time) string { return whenString(t) },
		"pct":  func(f float64) float64 { return 100 * f },
		"dict": func(kv ...any) map[string]any {
			m := make(map[string]any, len(kv)/2)
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
	}).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	h.tmpl = t
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", h.loginPage)
	mux.HandleFunc("POST /login", h.login)
	mux.HandleFunc("GET /{$}", h.authed(h.heldPage))
	mux.HandleFunc("GET /action/{ref}", h.authed(h.actionPage))
	mux.HandleFunc("POST /action/{ref}/settle", h.authed(h.csrfChecked(h.settle)))
	mux.HandleFunc("GET /destinations", h.authed(h.withMetrics(h.destinationsPage)))
	mux.HandleFunc("GET /destination", h.authed(h.withMetrics(h.destinationPage)))
	h.mux = mux
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The pages hold operator data: no caching, no framing (clickjacking
	// the settle form), no scripts at all.
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, r)
}

// base returns the relative path from r's page to the console's root, so
// links work wherever the console is mounted.
func base(r *http.Request) string {
	n := strings.Count(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if n == 0 {
		return "./"
	}
	return strings.Repeat("../", n)
}

// visible reports whether op may see tenant's actions.
func (h *handler) visible(op Operator, tenant string) bool {
	return (h.cfg.Tenants == nil || slices.Contains(h.cfg.Tenants, tenant)) &&
		(op.Tenants == nil || slices.Contains(op.Tenants, tenant))
}

func (h *handler) render(w http.ResponseWriter, status int, name string, data any) {
	var b strings.Builder
	if err := h.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "console: rendering failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// message renders a page that only says something, such as a refusal.
func (h *handler) message(w http.ResponseWriter, r *http.Request, status int, title, text string) {
	h.render(w, status, "message.html", map[string]any{
		"Base": base(r), "Title": title, "Text": text,
	})
}

func whenString(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

package presets

import (
	"net/http"

	"github.com/retrybudget/retrybudget/limiter"
)

// scoped returns a Boundary that narrows base with scope(r), for providers
// that keep separate limits per resource or per method under one
// credential. An empty scope leaves base's key unchanged.
func scoped(base limiter.Boundary, scope func(*http.Request) string) limiter.Boundary {
	return func(r *http.Request) string {
		if s := scope(r); s != "" {
			return base(r) + "|" + s
		}
		return base(r)
	}
}

package presets

import (
	"net/http"

	"github.com/retrybudget/retrybudget/limiter"
)

// scoped returns a Boundary that narrows base with part(r), for providers
// that keep separate limits per resource or per method under one
// credential: the boundary is limiter.Within(base(r), part(r)), so a
// cooldown of base's key (limiter.Scope) pauses every part of it. An empty
// part leaves base's key unchanged.
func scoped(base limiter.Boundary, part func(*http.Request) string) limiter.Boundary {
	return func(r *http.Request) string {
		if p := part(r); p != "" {
			return limiter.Within(base(r), p)
		}
		return base(r)
	}
}

package console

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// heldAction is one listed action as pages show it: never its key,
// fingerprint or any body.
type heldAction struct {
	Ref       string
	Short     string
	Tenant    string
	Operation string
	State     string
	Age       time.Duration
	Sending   bool
	Attempts  int
	LastClass string
	LastAt    time.Time
}

// group counts the listed actions of one tenant and operation.
type group struct {
	Tenant, Operation string
	Uncertain, Stuck  int
	Oldest            time.Duration
	Link              string
}

// groups are the held actions' groups, by tenant and operation.
type groups map[[2]string]*group

// of returns the group of tenant and operation, made on first use.
func (gs groups) of(tenant, operation string) *group {
	gk := [2]string{tenant, operation}
	g := gs[gk]
	if g == nil {
		g = &group{Tenant: tenant, Operation: operation, Link: "?" + url.Values{"tenant": {tenant}, "operation": {operation}}.Encode()}
		gs[gk] = g
	}
	return g
}

// sorted returns the groups by tenant, then operation.
func (gs groups) sorted() []*group {
	out := make([]*group, 0, len(gs))
	for _, g := range gs {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *group) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Operation, b.Operation))
	})
	return out
}

// oldestFirst sorts list by age, oldest first: the action waiting longest
// is the one to settle first.
func oldestFirst(list []heldAction) {
	slices.SortStableFunc(list, func(a, b heldAction) int { return cmp.Compare(b.Age, a.Age) })
}

// swept is what one page read from the store.
type swept struct {
	records []ledger.Record
	capped  bool // Sweep returned MaxScan records: there may be more
	corrupt error
}

// sweep reads at most MaxScan stuck records that op may see.
func (h *handler) sweep(ctx context.Context, op Operator) (swept, error) {
	// One record past the bound tells whether the bound cut the list.
	recs, err := h.cfg.Store.Sweep(ctx, h.cfg.MaxScan+1)
	var s swept
	if err != nil {
		if !errors.Is(err, ledger.ErrCorrupt) {
			return s, err
		}
		s.corrupt = err
	}
	if len(recs) > h.cfg.MaxScan {
		s.capped, recs = true, recs[:h.cfg.MaxScan]
	}
	for _, r := range recs {
		if h.visible(op, r.Key.Tenant) {
			s.records = append(s.records, r)
		}
	}
	return s, nil
}

// ref names an action in URLs: an HMAC of Key.ID under the Handler's
// secret. Key.ID is an unkeyed hash of the tenant, operation and key, which
// anyone could test guesses against; URLs end up in access logs and
// browser history, so they carry the keyed form.
func (h *handler) ref(k ledger.Key) string { return h.mac("action", k.ID())[:32] }

func (h *handler) held(r ledger.Record, now time.Time) heldAction {
	a := heldAction{
		Ref: h.ref(r.Key), Tenant: r.Key.Tenant, Operation: r.Key.Operation,
		State: stateName(r, now), Age: now.Sub(r.CreatedAt), Sending: r.Sending,
		Attempts: len(r.Attempts),
	}
	a.Short = a.Ref[:12]
	if n := len(r.Attempts); n > 0 {
		a.LastClass, a.LastAt = r.Attempts[n-1].Class, r.Attempts[n-1].At
	}
	return a
}

// stateName is how pages name a listed record's state.
func stateName(r ledger.Record, now time.Time) string {
	if r.State == ledger.StateInProgress && !now.Before(r.LeaseUntil) {
		return "in-progress, lease ended"
	}
	return r.State.String()
}

func (h *handler) heldPage(w http.ResponseWriter, r *http.Request) {
	if hl, ok := h.cfg.Store.(ledger.HeldLister); ok {
		h.indexedPage(w, r, hl)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	op := operatorOf(r)
	s, err := h.sweep(ctx, op.Operator)
	if err != nil {
		h.message(w, r, http.StatusBadGateway, "Store failed", "The ledger's store failed or did not answer in time; try again.")
		return
	}
	now := h.now()
	q := r.URL.Query()
	tenant, operation := q.Get("tenant"), q.Get("operation")
	minAge, _ := time.ParseDuration(q.Get("min_age"))
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)

	var (
		list             []heldAction
		uncertain, stuck int
		byGroup          = groups{} // at most MaxScan entries
	)
	for _, rec := range s.records {
		if (tenant != "" && rec.Key.Tenant != tenant) || (operation != "" && rec.Key.Operation != operation) ||
			now.Sub(rec.CreatedAt) < minAge {
			continue
		}
		a := h.held(rec, now)
		list = append(list, a)
		g := byGroup.of(rec.Key.Tenant, rec.Key.Operation)
		g.Oldest = max(g.Oldest, a.Age)
		if rec.State == ledger.StateUncertain {
			uncertain++
			g.Uncertain++
		} else {
			stuck++
			g.Stuck++
		}
	}
	oldestFirst(list)
	gs := byGroup.sorted()
	pages := max(1, (len(list)+h.cfg.PageSize-1)/h.cfg.PageSize)
	page = min(page, pages)
	from := (page - 1) * h.cfg.PageSize
	shown := list[from:min(from+h.cfg.PageSize, len(list))]
	pageLink := func(p int) string {
		v := url.Values{}
		for _, k := range []string{"tenant", "operation", "min_age"} {
			if q.Get(k) != "" {
				v.Set(k, q.Get(k))
			}
		}
		v.Set("page", strconv.Itoa(p))
		return "?" + v.Encode()
	}
	data := map[string]any{
		"Base": base(r), "Refresh": int(h.cfg.Refresh.Seconds()),
		"Uncertain": uncertain, "Stuck": stuck, "Total": len(list),
		"Groups": gs, "Actions": shown, "Page": page, "Pages": pages,
		"Tenant": tenant, "Operation": operation, "MinAge": q.Get("min_age"),
		"Scanned": len(s.records), "Capped": s.capped, "MaxScan": h.cfg.MaxScan,
		"Corrupt": s.corrupt != nil,
	}
	if page > 1 {
		data["Prev"] = pageLink(page - 1)
	}
	if page < pages {
		data["Next"] = pageLink(page + 1)
	}
	h.render(w, http.StatusOK, "held.html", data)
}

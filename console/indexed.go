package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// The held list of a store with a held index (ledger.HeldLister, the
// Redis store): a page is read from the index, oldest first, with the
// index's counts, instead of a Sweep of the whole keyspace; the actions
// in progress past their lease that the index does not hold (an owner
// died without Fail) come from a scan bounded by Config.MaxScan keys per
// node, shown on the first page.

// indexTenant returns the tenant filter the index can apply for op: the one
// asked for, or op's only tenant when it may see one.
func (h *handler) indexTenant(op Operator, tenant string) string {
	if tenant != "" {
		return tenant
	}
	switch {
	case len(op.Tenants) == 1:
		return op.Tenants[0]
	case op.Tenants == nil && len(h.cfg.Tenants) == 1:
		return h.cfg.Tenants[0]
	}
	return ""
}

func (h *handler) indexedPage(w http.ResponseWriter, r *http.Request, hl ledger.HeldLister) {
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	op := operatorOf(r).Operator
	q := r.URL.Query()
	tenant, operation, after := q.Get("tenant"), q.Get("operation"), ""
	if sealed := q.Get("after"); sealed != "" {
		var err error
		if after, err = h.unsealCursor(sealed); err != nil {
			h.message(w, r, http.StatusBadRequest, "Bad page link",
				"This page's link is not one this console made (or it restarted since); start again from the first page.")
			return
		}
	}
	minAge, _ := time.ParseDuration(q.Get("min_age"))
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)

	p, err := hl.Held(ctx, ledger.HeldQuery{
		Tenant: h.indexTenant(op, tenant), Operation: operation, After: after,
		Limit: h.cfg.PageSize, Examine: h.cfg.MaxScan,
	})
	corrupt := errors.Is(err, ledger.ErrCorrupt)
	if err != nil && !corrupt {
		h.message(w, r, http.StatusBadGateway, "Store failed", "The ledger's store failed or did not answer in time; try again.")
		return
	}
	recs := p.Records
	var scanCut bool
	if after == "" {
		stuck, complete, err := hl.StuckInProgress(ctx, h.cfg.MaxScan)
		if err != nil && !errors.Is(err, ledger.ErrCorrupt) {
			h.message(w, r, http.StatusBadGateway, "Store failed", "The ledger's store failed or did not answer in time; try again.")
			return
		}
		corrupt = corrupt || err != nil
		scanCut = !complete
		for _, s := range stuck {
			if (tenant == "" || s.Key.Tenant == tenant) && (operation == "" || s.Key.Operation == operation) {
				recs = append(recs, s)
			}
		}
	}
	now := h.now()
	var (
		list             []heldAction
		uncertain, stuck int
		byGroup          = groups{} // at most MaxScan entries: the index's counts and one page
	)
	for _, g := range p.Groups {
		if h.visible(op, g.Tenant) {
			byGroup.of(g.Tenant, g.Operation).Uncertain += g.Held
			uncertain += g.Held
		}
	}
	for _, rec := range recs {
		if !h.visible(op, rec.Key.Tenant) || now.Sub(rec.CreatedAt) < minAge {
			continue
		}
		a := h.held(rec, now)
		list = append(list, a)
		g := byGroup.of(rec.Key.Tenant, rec.Key.Operation)
		g.Oldest = max(g.Oldest, a.Age)
		if rec.State == ledger.StateInProgress {
			// In the index's count only if it was uncertain before.
			stuck++
			g.Stuck++
		}
	}
	oldestFirst(list)
	gs := byGroup.sorted()
	link := func(v url.Values) string {
		for _, k := range []string{"tenant", "operation", "min_age"} {
			if q.Get(k) != "" {
				v.Set(k, q.Get(k))
			}
		}
		return "?" + v.Encode()
	}
	total := p.Entries
	if op.Tenants != nil || h.cfg.Tenants != nil {
		// Entries counts every tenant's held actions: a scoped operator
		// is told only of the tenants it sees.
		total = uncertain
	}
	data := map[string]any{
		"Base": base(r), "Refresh": int(h.cfg.Refresh.Seconds()),
		"Uncertain": uncertain, "Stuck": stuck, "Total": total,
		"Groups": gs, "Actions": list, "Page": page, "Indexed": true,
		"Tenant": tenant, "Operation": operation, "MinAge": q.Get("min_age"),
		"Capped": p.Capped, "ScanCut": scanCut, "MaxScan": h.cfg.MaxScan,
		"Corrupt": corrupt,
	}
	if after != "" {
		data["Prev"] = link(url.Values{})
	}
	if p.Next != "" {
		data["Next"] = link(url.Values{"after": {h.sealCursor(p.Next)}, "page": {strconv.Itoa(page + 1)}})
	}
	h.render(w, http.StatusOK, "held.html", data)
}

// findIndexed looks for the held action whose reference is want through
// the index's pages, reading at most Config.MaxScan index entries, then
// among the stuck actions the bounded scan finds.
func (h *handler) findIndexed(ctx context.Context, hl ledger.HeldLister, want string, op Operator) (ledger.Record, bool, error) {
	var after string
	for read := 0; read < h.cfg.MaxScan; {
		p, err := hl.Held(ctx, ledger.HeldQuery{Tenant: h.indexTenant(op, ""), After: after, Limit: ledger.MaxHeldLimit, Examine: h.cfg.MaxScan})
		if err != nil && !errors.Is(err, ledger.ErrCorrupt) {
			return ledger.Record{}, false, err
		}
		for _, rec := range p.Records {
			if h.visible(op, rec.Key.Tenant) && h.ref(rec.Key) == want {
				return rec, true, nil
			}
		}
		read += ledger.MaxHeldLimit
		if after = p.Next; after == "" {
			break
		}
	}
	stuck, _, err := hl.StuckInProgress(ctx, h.cfg.MaxScan)
	if err != nil && !errors.Is(err, ledger.ErrCorrupt) {
		return ledger.Record{}, false, err
	}
	for _, rec := range stuck {
		if h.visible(op, rec.Key.Tenant) && h.ref(rec.Key) == want {
			return rec, true, nil
		}
	}
	return ledger.Record{}, false, nil
}

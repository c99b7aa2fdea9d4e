package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgercli"
)

// maxName and maxReason cap what the settle form writes into the record's
// reason, which every later read of the record carries.
const (
	maxName   = 100
	maxReason = 1000
)

// find returns the held record r's {ref} names, if op may see it, or,
// with the sealed key the page after settling carries (?k=), that record
// whether held or not.
func (h *handler) find(ctx context.Context, r *http.Request, op Operator) (ledger.Record, bool, error) {
	want := r.PathValue("ref")
	if sealed := r.URL.Query().Get("k"); sealed != "" {
		k, err := h.unseal(sealed)
		if err != nil || h.ref(k) != want || !h.visible(op, k.Tenant) {
			return ledger.Record{}, false, nil
		}
		rec, err := h.cfg.Store.Get(ctx, k)
		if errors.Is(err, ledger.ErrNotFound) {
			return ledger.Record{}, false, nil
		}
		return rec, err == nil, err
	}
	if hl, ok := h.cfg.Store.(ledger.HeldLister); ok {
		return h.findIndexed(ctx, hl, want, op)
	}
	s, err := h.sweep(ctx, op)
	if err != nil {
		return ledger.Record{}, false, err
	}
	for _, rec := range s.records {
		if h.ref(rec.Key) == want {
			return rec, true, nil
		}
	}
	return ledger.Record{}, false, nil
}

// settleAfter is when settling rec as not applied stops being refused: the
// end of the settle time of its last send (Record.SettleUntil), inside
// which a request sent may still reach the provider. A record written
// before stores kept SettleUntil counts Config.Lease from its last attempt.
func (h *handler) settleAfter(rec ledger.Record) time.Time {
	if !rec.SettleUntil.IsZero() {
		return rec.SettleUntil
	}
	var last time.Time
	if n := len(rec.Attempts); n > 0 {
		last = rec.Attempts[n-1].At
	}
	return last.Add(h.cfg.Lease)
}

// seen is the number of rec's last attempt: every grant and every send
// adds one, so it names the send an operator looked at. The settle form
// carries it, and a settle posted for an earlier send is refused.
func seen(rec ledger.Record) string {
	if n := len(rec.Attempts); n > 0 {
		return strconv.Itoa(rec.Attempts[n-1].N)
	}
	return "0"
}

func (h *handler) actionPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	op := operatorOf(r)
	rec, ok, err := h.find(ctx, r, op.Operator)
	switch {
	case err != nil:
		h.message(w, r, http.StatusBadGateway, "Store failed", "The ledger's store failed or did not answer in time; try again.")
		return
	case !ok:
		h.message(w, r, http.StatusNotFound, "Not held", "No held action has this reference: it was settled, it expired, or it is not yours to see.")
		return
	}
	now := h.now()
	data := map[string]any{
		"Base": base(r), "A": h.held(rec, now), "Owner": rec.Owner,
		"LeaseUntil": rec.LeaseUntil, "CreatedAt": rec.CreatedAt, "ExpiresAt": rec.ExpiresAt,
		"Reason": rec.Reason, "Attempts": rec.Attempts,
		"ReadOnly": h.cfg.ReadOnly, "CSRF": h.csrfToken(op.session), "AskName": op.Name == "",
		"SettleAfter": h.settleAfter(rec), "InSettleTime": now.Before(h.settleAfter(rec)),
		"Held": rec.Stuck(now), "Settlement": rec.Settlement, "Settled": settledNotice(r.URL.Query().Get("settled")),
		"Sealed": h.seal(rec.Key), "Seen": seen(rec),
	}
	if rec.Outcome != nil {
		data["OutcomeStatus"] = rec.Outcome.Status
	}
	h.render(w, http.StatusOK, "action.html", data)
}

// settledBy describes the operator's settlement of the action the form's
// sealed key (k) names, when one settled it: the conflict a second
// operator is shown. Empty when there is none to name.
func (h *handler) settledBy(ctx context.Context, r *http.Request, op Operator) string {
	k, err := h.unseal(r.PostFormValue("k"))
	if err != nil || h.ref(k) != r.PathValue("ref") || !h.visible(op, k.Tenant) {
		return ""
	}
	rec, err := h.cfg.Store.Get(ctx, k)
	if err != nil || rec.Settlement == nil || (rec.State != ledger.StateCompleted && rec.State != ledger.StateFailed) {
		return ""
	}
	return ledgercli.SettledBy(*rec.Settlement)
}

// settle resolves the action as the form says, through ledgercli.Resolve,
// the path of "retrybudget ledger resolve".
func (h *handler) settle(w http.ResponseWriter, r *http.Request) {
	if h.cfg.ReadOnly {
		h.message(w, r, http.StatusForbidden, "Read-only", "This console is read-only: nothing can be settled from it.")
		return
	}
	op := operatorOf(r)
	name := op.Name
	if name == "" {
		name = strings.TrimSpace(r.PostFormValue("name"))
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if name == "" || reason == "" {
		h.message(w, r, http.StatusBadRequest, "Incomplete", "A reason and your name are required.")
		return
	}
	if len(name) > maxName || len(reason) > maxReason {
		h.message(w, r, http.StatusBadRequest, "Too long", fmt.Sprintf("Keep the name under %d and the reason under %d characters.", maxName, maxReason))
		return
	}
	var res ledger.Resolution
	switch r.PostFormValue("applied") {
	case "yes":
		status, err := strconv.Atoi(r.PostFormValue("status"))
		if err != nil || status < 100 || status > 599 {
			h.message(w, r, http.StatusBadRequest, "Bad status", "The provider's status must be an HTTP status code (100-599).")
			return
		}
		ctype := "text/plain; charset=utf-8"
		if r.PostFormValue("content_type") == "json" {
			ctype = "application/json"
		}
		res = ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{
			Status: status, Body: []byte(r.PostFormValue("answer")),
			Header: map[string][]string{"Content-Type": {ctype}},
		}}
	case "no":
		res = ledger.Resolution{State: ledger.StateFailed}
	default:
		h.message(w, r, http.StatusBadRequest, "Incomplete", "Choose whether the provider applied the action.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	rec, ok, err := h.find(ctx, r, op.Operator)
	switch {
	case err != nil:
		h.message(w, r, http.StatusBadGateway, "Store failed", "The ledger's store failed or did not answer in time; nothing was changed.")
		return
	case !ok:
		text := "This action is no longer held: another operator or a reconciler settled it, or it expired. Nothing was changed."
		if by := h.settledBy(ctx, r, op.Operator); by != "" {
			text = "Nothing was changed: this action was " + by + "."
		}
		h.message(w, r, http.StatusConflict, "Not held", text)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("seen")), []byte(seen(rec))) != 1 {
		// The form was read for an earlier send: the action was settled
		// and sent again, or sent again by its owner, since. What the
		// operator checked with the provider is not this send.
		h.message(w, r, http.StatusConflict, "Changed",
			"This action was sent or settled again since its page was loaded; nothing was changed. Reload its page and check the latest send with the provider.")
		return
	}
	now := h.now()
	early := res.State == ledger.StateFailed && now.Before(h.settleAfter(rec))
	if early {
		want := h.confirmToken(op.session, h.ref(rec.Key), h.settleAfter(rec))
		if subtle.ConstantTimeCompare([]byte(r.PostFormValue("confirm")), []byte(want)) != 1 {
			h.askAgain(w, r, op, rec, name, reason)
			return
		}
	}
	// The audit trail: who, why and (by the store's clock) when, written
	// with the resolution in one step (ledger.Settler).
	res.Reason = reason
	res.Settlement = &ledger.Settlement{By: name, Reason: reason}
	if res.State == ledger.StateCompleted {
		res.Settlement.Reference = strings.TrimSpace(r.PostFormValue("reference"))
	}
	if len(res.Settlement.Reference) > maxName {
		h.message(w, r, http.StatusBadRequest, "Too long", fmt.Sprintf("Keep the provider's reference under %d characters.", maxName))
		return
	}
	var got ledger.Reconciled
	if early {
		res.Reason = fmt.Sprintf("%s (confirmed inside the settle time, which ends %s)", reason, whenString(h.settleAfter(rec)))
		res.Settlement.Reason = res.Reason
		got.State, err = h.settleConfirmed(ctx, rec, res, "console:"+name)
	} else {
		got, err = ledgercli.Resolve(ctx, h.cfg.Store, rec.Key, res, "console:"+name)
	}
	switch {
	case errors.Is(err, ledger.ErrNotOwner):
		text := "Another operator or owner took this action over first; nothing was changed. Reload the list to see its state."
		if by := h.settledBy(ctx, r, op.Operator); by != "" {
			text = "Nothing was changed: this action was " + by + "."
		}
		h.message(w, r, http.StatusConflict, "Conflict", text)
		return
	case err != nil:
		h.message(w, r, http.StatusBadGateway, "Store failed", "The ledger's store refused or failed; the action may be unchanged. Reload to see its state.")
		return
	}
	if res.State == ledger.StateFailed && got.State == ledger.StateUncertain {
		// The store's own clock found the settle time still running
		// (ledger.Reservation.Trust) and kept the action uncertain.
		h.message(w, r, http.StatusConflict, "Too early",
			"The store says a send may still reach the provider: the action stays uncertain. Try again later.")
		return
	}
	// Relative to .../action/{ref}/settle: the action's page, which shows
	// the settlement; the sealed key finds the action though it is no
	// longer held.
	// Set by hand: http.Redirect would make it absolute from the path
	// under any http.StripPrefix, losing the prefix.
	v := url.Values{"k": {h.seal(rec.Key)}, "settled": {got.State.String()}}
	w.Header().Set("Location", base(r)+"action/"+h.ref(rec.Key)+"?"+v.Encode())
	w.WriteHeader(http.StatusSeeOther)
}

// settledNotice is the state the page after settling names (?settled=),
// or "" for anything but a state's name: the notice says what the console
// did, never text a link chose.
func settledNotice(q string) string {
	if st, err := ledger.ParseState(q); err == nil && (st == ledger.StateCompleted || st == ledger.StateFailed || st == ledger.StateUncertain) {
		return st.String()
	}
	return ""
}

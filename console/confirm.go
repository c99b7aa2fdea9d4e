package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// Asking again: settling an action as "not applied" inside its settle
// time (Record.SettleUntil) could send it twice, since a request already
// sent may still reach the provider. The console does not refuse it
// outright (the operator may know better: the provider's log shows the
// request was refused at the door) but answers the first post with a page
// that shows the sending mark and the last attempt's time and asks for an
// explicit confirmation: a second form carrying, beside the CSRF token, a
// confirm token bound to the session, the action and the end of its settle
// time, so a confirmation can neither be forged nor replayed for another
// action or a later send.

// confirmToken is the confirm field's value for settling the action ref
// as not applied before until, in session.
func (h *handler) confirmToken(session, ref string, until time.Time) string {
	return h.mac("confirm", session, ref, strconv.FormatInt(until.UnixNano(), 10))
}

// askAgain answers a "not applied" posted inside rec's settle time without
// a valid confirmation: 409 (nothing was changed) with the confirmation
// form, which repeats the operator's name and reason.
func (h *handler) askAgain(w http.ResponseWriter, r *http.Request, op signedIn, rec ledger.Record, name, reason string) {
	until := h.settleAfter(rec)
	ref := h.ref(rec.Key)
	var lastAt time.Time
	var lastClass string
	if n := len(rec.Attempts); n > 0 {
		lastAt, lastClass = rec.Attempts[n-1].At, rec.Attempts[n-1].Class
	}
	h.render(w, http.StatusConflict, "confirm.html", map[string]any{
		"Base": base(r), "A": h.held(rec, h.now()), "Ref": ref,
		"SettleAfter": until, "LastAt": lastAt, "LastClass": lastClass,
		"CSRF": h.csrfToken(op.session), "Confirm": h.confirmToken(op.session, ref, until),
		"Name": name, "AskName": op.Name == "", "Reason": reason, "Seen": seen(rec),
	})
}

// settleConfirmed settles rec as not applied inside its settle time, as
// the operator confirmed: a reconciler's takeover (Reserve with a fresh
// fencing token), then Fail, without ledger.Reservation.Trust, which
// would keep the action uncertain until the settle time ends. An action
// the takeover finds never sent is released as failed, as
// ledgercli.Resolve does. It returns the state the record was left in.
//
// Like ledgercli.Resolve, it leaves an action already completed or failed
// alone (a reconciler's Reserve would take a failed action over as a
// retry): it reads the record again first, since rec may be a page old,
// and an action another operator settles between that read and the
// takeover is released as that settlement left it and reported as theirs.
func (h *handler) settleConfirmed(ctx context.Context, rec ledger.Record, settled ledger.Resolution, owner string) (ledger.State, error) {
	now, err := h.cfg.Store.Get(ctx, rec.Key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return 0, fmt.Errorf("%w: the action expired", ledger.ErrNotOwner)
	case err != nil:
		return 0, err
	case now.State == ledger.StateCompleted || now.State == ledger.StateFailed:
		return now.State, fmt.Errorf("%w: the action is %s", ledger.ErrNotOwner, now.State)
	}
	res, err := h.cfg.Store.Reserve(ctx, ledger.ReserveRequest{
		Key: now.Key, Fingerprint: now.Fingerprint, Owner: owner, Reconciler: true,
	})
	if err != nil {
		return 0, err
	}
	if !res.Verdict.Owns() {
		return res.Record.State, fmt.Errorf("%w: the action is %s (verdict %s)", ledger.ErrNotOwner, res.Record.State, res.Verdict)
	}
	if s := res.Record.Settlement; s != nil && (now.Settlement == nil || !s.At.Equal(now.Settlement.At)) {
		// Settled (as not applied: a failed action) since the read:
		// give it back as failed, its settlement kept.
		if err := h.cfg.Store.Fail(ctx, rec.Key, res.Token, ledger.Failure{Reason: "released: already settled by " + s.By}); err != nil {
			return 0, err
		}
		return ledger.StateFailed, fmt.Errorf("%w: already settled by %s", ledger.ErrNotOwner, s.By)
	}
	settled.State = ledger.StateFailed
	if err := ledger.Settle(ctx, h.cfg.Store, rec.Key, res.Token, settled); err != nil {
		return 0, err
	}
	return ledger.StateFailed, nil
}

package ledger

import (
	"context"
	"errors"
	"fmt"
)

// A restarted worker reclaims its own actions. A record in progress names
// the Owner and the Instance (one run of that owner) its lease was granted
// to. When a Reserve comes from the same non-empty Owner under another
// non-empty Instance, the run that holds the lease has restarted: nobody
// will renew, mark or complete under it, so waiting out the lease gains
// nothing. The store decides as for an expired lease (Input.Reclaim), takes
// the action over with a new fencing token, and what follows is Resolve's:
// run what was never marked as sending, reconcile or re-send (keys
// honoured) what may have been sent, else leave it uncertain. A
// reconciler's "not found" inside the settle time of the last send
// (Decision.Settling) is not trusted: the destination may still apply the
// dead run's request.
//
// This needs owner names unique among live processes. Two live processes
// sharing one take each other's live actions over; fencing still keeps
// each action to one sender (the loser's mark, which an owner writes
// before every send, attempt or completion is refused with ErrNotOwner,
// and an action it had marked as sending is decided as maybe sent, never
// blindly sent again), and the loser learns of the misconfiguration
// through CheckOwnerShared.

// reclaims reports whether req, reserving an action whose record r is in
// progress, comes from another run of the owner r's grant was made to: the
// same non-empty Owner with another non-empty Instance (Input.Reclaim).
func (req *ReserveRequest) reclaims(r *Record) bool {
	return r.State == StateInProgress && req.Owner != "" && req.Instance != "" &&
		r.Owner == req.Owner && r.Instance != "" && r.Instance != req.Instance
}

// CheckOwnerShared explains err, an owner's fenced call on k that failed
// with ErrNotOwner, when it can: it reads k's record, and if its last grant
// went to owner under another instance, a second live process uses the
// owner name, and it returns an error wrapping ErrOwnerShared (which wraps
// ErrNotOwner) and err. Otherwise, also when err is not ErrNotOwner, owner
// or instance is empty, or the read fails, it returns err unchanged. It
// costs one Get, on the ErrNotOwner path only.
func CheckOwnerShared(ctx context.Context, s Store, k Key, owner, instance string, err error) error {
	if !errors.Is(err, ErrNotOwner) || errors.Is(err, ErrOwnerShared) || owner == "" || instance == "" {
		return err
	}
	rec, gerr := s.Get(ctx, k)
	if gerr != nil || rec.Owner != owner || rec.Instance == "" || rec.Instance == instance {
		return err
	}
	return fmt.Errorf("%w (owner %q; action %s): %w", ErrOwnerShared, owner, k.short(), err)
}

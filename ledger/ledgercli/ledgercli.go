// Package ledgercli is the operator's command line over a ledger.Store:
// "ledger list", "ledger show" and "ledger resolve", shared by the
// retrybudget command (Redis) and the retrybudget-pg command of the
// PostgreSQL module, so that the core's go.mod never needs an SQL driver.
package ledgercli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// Opener opens the store a URL names. close releases it.
type Opener func(ctx context.Context, url string) (s ledger.Store, close func(), err error)

// Timeout bounds one command's work against the store.
const Timeout = 30 * time.Second

// Run runs "ledger <list|show|resolve> [flags]" (args without the word
// "ledger") against the store open returns for --url, or the environment
// variable RETRYBUDGET_LEDGER_URL, and returns the exit status: 0 on
// success, 1 when the store refused or failed, 2 for a usage error.
func Run(args []string, stdout, stderr io.Writer, open Opener) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	fs := flag.NewFlagSet("ledger "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", os.Getenv("RETRYBUDGET_LEDGER_URL"), "the store's URL (default $RETRYBUDGET_LEDGER_URL)")
	var k ledger.Key
	key := func() {
		fs.StringVar(&k.Tenant, "tenant", "", "the action's tenant")
		fs.StringVar(&k.Operation, "operation", "", "the action's operation")
		fs.StringVar(&k.Key, "key", "", "the action's idempotency key")
	}
	var (
		state                                 *string
		limit                                 *int
		completed, failed                     *bool
		status                                *int
		body, reason, owner, ctype, reference *string
	)
	switch args[0] {
	case "list":
		state = fs.String("state", "stuck", "uncertain, in-progress (lease run out) or stuck (both)")
		limit = fs.Int("limit", 100, "at most this many records; 0 means all")
	case "show":
		key()
	case "resolve":
		key()
		completed = fs.Bool("completed", false, "the destination performed the action: store --status and --body as its outcome")
		failed = fs.Bool("failed", false, "the destination never performed the action: the next request runs it again")
		status = fs.Int("status", 200, "with --completed, the outcome's HTTP status")
		body = fs.String("body", "", "with --completed, the outcome's body")
		ctype = fs.String("content-type", "application/json", "with --completed, the outcome's Content-Type")
		reason = fs.String("reason", "", "why, such as what the provider's dashboard showed (required; kept with the record)")
		reference = fs.String("reference", "", "with --completed, the provider's reference, such as a message ID (kept with the record)")
		host, _ := os.Hostname()
		owner = fs.String("owner", "operator@"+host, "the operator, named in the record's settlement")
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "retrybudget ledger: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *url == "" {
		fmt.Fprintln(stderr, "retrybudget ledger: --url (or RETRYBUDGET_LEDGER_URL) is required")
		return 2
	}
	if (args[0] == "show" || args[0] == "resolve") && k.Key == "" {
		fmt.Fprintln(stderr, "retrybudget ledger: --key is required")
		return 2
	}
	if args[0] == "resolve" && *completed == *failed {
		fmt.Fprintln(stderr, "retrybudget ledger resolve: give exactly one of --completed and --failed")
		return 2
	}
	if args[0] == "resolve" && strings.TrimSpace(*reason) == "" {
		fmt.Fprintln(stderr, "retrybudget ledger resolve: --reason is required: say why, such as what the provider's dashboard showed")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	s, closeStore, err := open(ctx, *url)
	if err != nil {
		fmt.Fprintf(stderr, "retrybudget ledger: %v\n", err)
		return 2
	}
	defer closeStore()

	switch args[0] {
	case "list":
		err = list(ctx, s, *state, *limit, stdout)
	case "show":
		var r ledger.Record
		if r, err = s.Get(ctx, k); err == nil {
			err = printJSON(stdout, r)
		}
	case "resolve":
		res := ledger.Resolution{State: ledger.StateFailed, Reason: *reason}
		if *completed {
			res = ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{
				Status: *status, Body: []byte(*body),
				Header: map[string][]string{"Content-Type": {*ctype}},
			}}
		}
		res.Settlement = &ledger.Settlement{By: *owner, Reason: strings.TrimSpace(*reason), Reference: *reference}
		err = resolve(ctx, s, k, res, *owner, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "retrybudget ledger %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// list prints the stuck records Sweep returns that match state.
func list(ctx context.Context, s ledger.Store, state string, limit int, w io.Writer) error {
	keep := map[string]func(ledger.Record) bool{
		"stuck":       func(ledger.Record) bool { return true },
		"uncertain":   func(r ledger.Record) bool { return r.State == ledger.StateUncertain },
		"in-progress": func(r ledger.Record) bool { return r.State == ledger.StateInProgress },
	}[state]
	if keep == nil {
		return fmt.Errorf("%w: --state %q: want uncertain, in-progress or stuck", ledger.ErrInvalid, state)
	}
	// Sweep's limit counts both kinds; filter after reading them all.
	// Records it could not decode are skipped and reported after the
	// others are printed.
	recs, err := s.Sweep(ctx, 0)
	if err != nil && !errors.Is(err, ledger.ErrCorrupt) {
		return err
	}
	var out []ledger.Record
	for _, r := range recs {
		if keep(r) && (limit <= 0 || len(out) < limit) {
			out = append(out, r)
		}
	}
	return errors.Join(printJSON(w, out), err)
}

// resolve settles one stuck action with Resolve and prints what it did.
func resolve(ctx context.Context, s ledger.Store, k ledger.Key, res ledger.Resolution, owner string, w io.Writer) error {
	r, err := Resolve(ctx, s, k, res, owner)
	if err != nil {
		return err
	}
	if r.Verdict != ledger.VerdictReconcile {
		// Reconcile found the action never sent and released it.
		fmt.Fprintf(w, "released %s: never sent, recorded %s\n", k.ID()[:12], strconv.Quote(r.State.String()))
		return nil
	}
	if res.State == ledger.StateFailed && r.State == ledger.StateUncertain {
		// The store's clock found the last send's settle time running
		// (ledger.Reservation.Trust): nothing was settled.
		until := "its end"
		if rec, err := s.Get(ctx, k); err == nil && !rec.SettleUntil.IsZero() {
			until = rec.SettleUntil.UTC().Format(time.RFC3339)
		}
		return fmt.Errorf("%s stays uncertain: %w; run this again after %s", k.ID()[:12], errSettling, until)
	}
	fmt.Fprintf(w, "resolved %s: %s\n", k.ID()[:12], strconv.Quote(r.State.String()))
	return nil
}

// errSettling is why "ledger resolve --failed" settled nothing (exit
// status 1): the settle time of the action's last send has not ended, so a
// request already sent may still reach the provider, and the store keeps
// the action uncertain (ledger.Reservation.Trust).
var errSettling = errors.New("the settle time of its last send has not ended: a request already sent may still reach the provider")

// Resolve settles one stuck action the way any owner would, the one path
// of "ledger resolve" and the operator console: it takes the action over
// with Reserve (as a reconciler, under the stored fingerprint, so it gets
// a fresh fencing token only if the action is uncertain or its lease ran
// out), then completes or fails it with that token as res says. An action
// found never sent (its owner died before marking it) is released as
// failed instead, since nothing can have left; the result's Verdict is
// then not VerdictReconcile. An action that is live or settled, including
// one another operator is resolving at the same time, is left alone and
// reported as an error wrapping ledger.ErrNotOwner: the fencing token lets
// exactly one resolver win; when an operator settled it, the error names
// who, when and as what (ledger.Record.Settlement). One exception to
// "left alone": an action another resolver settles as failed between
// Resolve's read and its takeover is taken over as a retry and released
// as failed again (its settlement kept, its reason rewritten); the error
// still names that settlement.
//
// res.Settlement, when set, is written with the resolution
// (ledger.Settle), its time by the store's clock.
func Resolve(ctx context.Context, s ledger.Store, k ledger.Key, res ledger.Resolution, owner string) (ledger.Reconciled, error) {
	rec, err := s.Get(ctx, k)
	if err != nil {
		return ledger.Reconciled{Key: k}, err
	}
	if settled(rec) {
		// A reconciler's Reserve takes a failed action over as a retry,
		// as any caller's would: refuse here, before it does.
		return ledger.Reconciled{Key: k, State: rec.State}, notStuck(rec, "")
	}
	done := ledger.Reconcile(ctx, s, func(context.Context, ledger.Record) (ledger.Resolution, error) {
		return res, nil
	}, []ledger.Record{rec}, owner)
	if len(done) != 1 {
		return ledger.Reconciled{Key: k}, ctx.Err()
	}
	r := done[0]
	if r.Err != nil {
		return r, r.Err
	}
	if !r.Verdict.Owns() {
		now, err := s.Get(ctx, k)
		if err != nil {
			now = ledger.Record{State: r.State}
		}
		return r, notStuck(now, r.Verdict.String())
	}
	if r.Verdict != ledger.VerdictReconcile {
		// Released as never sent. Another resolver may have settled the
		// action as failed between the read above and the takeover, which
		// then found it settled, not stuck: that resolution stands.
		if now, err := s.Get(ctx, k); err == nil && now.Settlement != nil &&
			(rec.Settlement == nil || !now.Settlement.At.Equal(rec.Settlement.At)) {
			return r, notStuck(now, "")
		}
	}
	return r, nil
}

// settled reports whether rec's action is completed or failed.
func settled(rec ledger.Record) bool {
	return rec.State == ledger.StateCompleted || rec.State == ledger.StateFailed
}

// notStuck is the error for an action Resolve must leave alone: who settled
// it, when it was an operator, else its state and the verdict (if any) that
// found it so.
func notStuck(rec ledger.Record, verdict string) error {
	if rec.Settlement != nil && settled(rec) {
		return fmt.Errorf("%w: %s", ledger.ErrNotOwner, SettledBy(*rec.Settlement))
	}
	if verdict != "" {
		return fmt.Errorf("%w: the action is %s (verdict %s): only an uncertain action or one whose lease ran out can be resolved",
			ledger.ErrNotOwner, rec.State, verdict)
	}
	return fmt.Errorf("%w: the action is %s: only an uncertain action or one whose lease ran out can be resolved",
		ledger.ErrNotOwner, rec.State)
}

// SettledBy describes an operator's settlement in words, for a conflict:
// "already settled as applied by alice at 2026-12-04T03:10:00Z: checked
// the provider's log".
func SettledBy(s ledger.Settlement) string {
	as := "not applied"
	if s.Applied {
		as = "applied"
	}
	return fmt.Sprintf("already settled as %s by %s at %s: %s", as, s.By, s.At.UTC().Format(time.RFC3339), s.Reason)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: retrybudget ledger <command> --url URL [flags]

commands:
  list      list stuck actions: --state uncertain|in-progress|stuck
  show      print one action's record: --tenant T --operation O --key K
  resolve   settle a stuck action as an owner would: --completed [--status --body] | --failed

The URL may also come from RETRYBUDGET_LEDGER_URL.
`)
}

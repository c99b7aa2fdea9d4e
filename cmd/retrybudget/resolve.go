package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/retrybudget/retrybudget/ledger"
)

// resolve runs "retrybudget resolve": it feeds its flags to ledger.Resolve
// and prints the verdict and the decision path, so an engineer can see
// when work is replayed, held or rejected without running a store.
func resolve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("resolve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		in    ledger.Input
		state = fs.String("state", "absent", "stored state: "+stateNames())
	)
	fs.StringVar(&in.Fingerprint, "fingerprint", "", "the request's fingerprint")
	fs.StringVar(&in.StoredFingerprint, "stored", "", "the stored fingerprint")
	fs.BoolVar(&in.LeaseExpired, "lease-expired", false, "the owner's lease has run out (with --state in-progress)")
	fs.BoolVar(&in.Limited, "limited", false, "the destination is rate limited")
	fs.BoolVar(&in.Reconciler, "reconciler", false, "a reconciler is configured")
	fs.BoolVar(&in.KeysHonoured, "keys-honoured", false, "the destination honours idempotency keys")
	fs.BoolVar(&in.Settling, "settling", false, "the last send is within its settle time")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: retrybudget resolve [flags]")
		fmt.Fprintln(stderr, "\nPrints the ledger's decision for a request against a stored action.")
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "retrybudget resolve: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	st, err := ledger.ParseState(*state)
	if err != nil {
		fmt.Fprintf(stderr, "retrybudget resolve: %v (want one of %s)\n", err, stateNames())
		return 2
	}
	in.State = st

	d := ledger.Resolve(in)
	fmt.Fprintf(stdout, "verdict: %s\n", d.Verdict)
	fmt.Fprintf(stdout, "send:    %t\n", d.Send)
	fmt.Fprintln(stdout, "path:")
	for i, step := range d.Path {
		fmt.Fprintf(stdout, "  %d. %s\n", i+1, step)
	}
	return 0
}

// stateNames lists the states --state accepts.
func stateNames() string {
	var names []string
	for st := ledger.StateAbsent; st <= ledger.StateExpired; st++ {
		names = append(names, st.String())
	}
	return strings.Join(names, ", ")
}

package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    string
		stderrHas string
	}{
		{
			name: "completed with a different fingerprint is a conflict, even when limited",
			args: []string{"resolve", "--state", "completed", "--fingerprint", "A", "--stored", "B", "--limited"},
			stdout: `verdict: conflict
send:    false
path:
  1. stored state is completed
  2. request fingerprint differs from the stored one: the key was reused for a different request
  3. reject without sending
`,
		},
		{
			name: "completed with the same fingerprint replays",
			args: []string{"resolve", "--state=completed", "--fingerprint=A", "--stored=A"},
			stdout: `verdict: replayed
send:    false
path:
  1. stored state is completed
  2. request fingerprint matches the stored one
  3. do not send: return the stored response, marked as replayed
`,
		},
		{
			name: "absent and limited waits",
			args: []string{"resolve", "--limited"},
			stdout: `verdict: delayed
send:    false
path:
  1. no live record: never reserved, or dropped after its retention
  2. reserve the action atomically for one owner with a lease, then send
  3. destination is rate limited: wait without sending; the record is kept as it is, not deleted or reset
`,
		},
		{
			name: "dead owner without reconciler or key support is uncertain",
			args: []string{"resolve", "--state", "in-progress", "--lease-expired", "--fingerprint", "A", "--stored", "A"},
			stdout: `verdict: uncertain
send:    false
path:
  1. stored state is in-progress
  2. request fingerprint matches the stored one
  3. the owner's lease expired: it died or stalled mid-call, so the destination may have acted
  4. no reconciler, and the destination does not honour idempotency keys
  5. do not send: report the outcome as uncertain for manual reconciliation
`,
		},
		{
			name: "dead owner with a reconciler reconciles",
			args: []string{"resolve", "--state", "in-progress", "--lease-expired", "--reconciler", "--keys-honoured"},
			stdout: `verdict: reconcile
send:    false
path:
  1. stored state is in-progress
  2. request fingerprint matches the stored one
  3. the owner's lease expired: it died or stalled mid-call, so the destination may have acted
  4. a reconciler is configured: take over and ask it what the destination did
`,
		},
		{
			name: "inside the settle time a reconciler's not-found is not trusted",
			args: []string{"resolve", "--state", "uncertain", "--reconciler", "--settling"},
			stdout: `verdict: reconcile
send:    false
path:
  1. stored state is uncertain
  2. request fingerprint matches the stored one
  3. the outcome was recorded as uncertain: the destination may have acted
  4. a reconciler is configured: take over and ask it what the destination did
  5. the last send is within its settle time and keys are not honoured: the destination may still apply it, so only a found effect settles it now; "not found" leaves it uncertain until the settle time has passed
`,
		},
		{
			name: "expired runs as a new action",
			args: []string{"resolve", "--state", "expired", "--fingerprint", "A", "--stored", "B"},
			stdout: `verdict: created
send:    true
path:
  1. record is past its retention: it is forgotten and its stored outcome is not replayed
  2. run as a new action: reserve it for one owner with a lease, then send
`,
		},
		{name: "unknown state", args: []string{"resolve", "--state", "done"}, code: 2, stderrHas: "want one of absent, in-progress, completed, failed, uncertain, expired"},
		{name: "stray argument", args: []string{"resolve", "completed"}, code: 2, stderrHas: `unexpected argument "completed"`},
		{name: "unknown flag", args: []string{"resolve", "--nope"}, code: 2, stderrHas: "flag provided but not defined"},
		{name: "resolve help", args: []string{"resolve", "-h"}, code: 0, stderrHas: "-keys-honoured"},
		{name: "no command", args: nil, code: 2, stderrHas: "usage: retrybudget"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderrHas: `unknown command "frobnicate"`},
		{name: "help", args: []string{"help"}, code: 0, stdout: "usage: retrybudget <command> [flags]\n\ncommands:\n  resolve   show what the action ledger decides for a request, and why\n  plan      show a retry policy's attempt schedule, worst case and outage amplification\n  ledger    list, show and resolve stuck actions in a Redis ledger (--url redis://...)\n  console   serve the operator console on a Redis ledger (--url redis://... --addr 127.0.0.1:8080)\n\nRun \"retrybudget <command> -h\" for a command's flags.\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if tc.stdout != "" || tc.code != 0 {
				if stdout.String() != tc.stdout {
					t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), tc.stdout)
				}
			}
			if !strings.Contains(stderr.String(), tc.stderrHas) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.stderrHas)
			}
		})
	}
}

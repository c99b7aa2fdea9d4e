package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgercli"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
)

// TestLedgerCommandRedis drives list, show and resolve against a real
// Redis: an action whose owner died is listed as stuck, resolved as
// completed with a fresh fencing token, after which the dead owner's token
// no longer completes it and a request replays the operator's outcome.
func TestLedgerCommandRedis(t *testing.T) {
	client := redistest.Client(t)
	prefix := redistest.Prefix(t)
	opt := client.Options()
	url := "redis://" + opt.Addr + "/" + strconv.Itoa(opt.DB) + "?prefix=" + prefix
	if opt.Password != "" {
		t.Skip("the test builds a URL without the password")
	}
	t.Setenv(ledgercli.FingerprintKeyEnv, string(redistest.LedgerKey()))
	s := ledgertest.Redis(t, client, prefix)
	k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-9"}
	dead, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "dead", Lease: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	live := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-10"}
	if _, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: live, Fingerprint: "fp", Lease: time.Hour}); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"ledger"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}

	var listed []ledger.Record
	deadline := time.Now().Add(10 * time.Second)
	for len(listed) == 0 { // the dead owner's lease runs out on the server's clock
		if time.Now().After(deadline) {
			t.Fatal("the dead owner's action was never listed as stuck")
		}
		code, out, errs := cli("list", "--url", url, "--state", "in-progress")
		if code != 0 {
			t.Fatalf("list: %d %s", code, errs)
		}
		if err := json.Unmarshal([]byte(out), &listed); err != nil {
			t.Fatalf("list output %q: %v", out, err)
		}
		time.Sleep(10 * time.Millisecond) // polling period
	}
	if len(listed) != 1 || listed[0].Key != k {
		t.Fatalf("listed %+v, want only the stuck action", listed)
	}
	if code, out, _ := cli("list", "--url", url, "--state", "uncertain"); code != 0 || strings.TrimSpace(out) != "null" {
		t.Fatalf("list uncertain: %d %q", code, out)
	}

	if code, _, errs := cli("resolve", "--url", url, "--tenant", "acme", "--operation", "charge", "--key", "order-9", "--failed"); code != 2 || !strings.Contains(errs, "--reason is required") {
		t.Fatalf("resolving without a reason: %d %s", code, errs)
	}
	if code, _, errs := cli("resolve", "--url", url, "--tenant", "acme", "--operation", "charge", "--key", "order-10", "--failed", "--reason", "r"); code != 1 || !strings.Contains(errs, "not the action's owner") {
		t.Fatalf("resolving a live action: %d %s", code, errs)
	}
	if code, out, errs := cli("resolve", "--url", url, "--tenant", "acme", "--operation", "charge", "--key", "order-9",
		"--completed", "--status", "201", "--body", `{"id":"ch_9"}`, "--reason", "in the provider's dashboard", "--reference", "ch_9", "--owner", "alice"); code != 0 {
		t.Fatalf("resolve: %d %s %s", code, out, errs)
	}
	if err := s.Complete(t.Context(), k, dead.Token, ledger.Outcome{Status: 500}); err == nil {
		t.Fatal("the dead owner's token still completes the resolved action")
	}
	code, out, errs := cli("show", "--url", url, "--tenant", "acme", "--operation", "charge", "--key", "order-9")
	var shown ledger.Record
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown.State != ledger.StateCompleted || string(shown.Outcome.Body) != `{"id":"ch_9"}` {
		t.Fatalf("show: %d %s %s", code, out, errs)
	}
	if st := shown.Settlement; st == nil || st.By != "alice" || st.Reason != "in the provider's dashboard" || st.Reference != "ch_9" || !st.Applied || st.At.IsZero() {
		t.Fatalf("show prints the settlement %+v; want alice's, applied, with its reason, reference and time:\n%s", st, out)
	}
	if code, _, errs := cli("resolve", "--url", url, "--tenant", "acme", "--operation", "charge", "--key", "order-9", "--failed", "--reason", "late", "--owner", "bob"); code != 1 ||
		!strings.Contains(errs, "already settled as applied by alice") {
		t.Fatalf("a second resolution: %d %s; want a conflict naming alice's settlement", code, errs)
	}
	replay, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp"})
	if err != nil || replay.Verdict != ledger.VerdictReplayed || replay.Record.Outcome.Status != 201 {
		t.Fatalf("after resolve: %s %v", replay.Verdict, err)
	}
}

func TestLedgerCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"ledger"},
		{"ledger", "bogus"},
		{"ledger", "list"},
		{"ledger", "show", "--url", "redis://127.0.0.1:1"},
		{"ledger", "resolve", "--url", "redis://127.0.0.1:1", "--key", "k"},
		{"ledger", "list", "--url", "postgres://x/y"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || errb.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 with a message", args, code, errb.String())
		}
	}
}

// An encrypted store is readable by the operator's command when the
// deployment's encryption keys are in RETRYBUDGET_ENCRYPTION_KEYS: show
// prints the stored body, not its ciphertext.
func TestLedgerCommandReadsAnEncryptedStore(t *testing.T) {
	client := redistest.Client(t)
	prefix := redistest.Prefix(t)
	opt := client.Options()
	if opt.Password != "" {
		t.Skip("the test builds a URL without the password")
	}
	url := "redis://" + opt.Addr + "/" + strconv.Itoa(opt.DB) + "?prefix=" + prefix
	encKey := []byte("0123456789abcdef0123456789abcdef")
	t.Setenv(ledgercli.FingerprintKeyEnv, string(redistest.LedgerKey()))
	s, err := ledger.NewRedis(client, ledger.RedisConfig{Prefix: prefix, Config: ledger.Config{
		FingerprintKeys: ledger.FingerprintKeys{redistest.LedgerKey()}, EncryptionKeys: ledger.EncryptionKeys{encKey}}})
	if err != nil {
		t.Fatal(err)
	}
	k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-11"}
	g, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(t.Context(), k, g.Token, ledger.Outcome{Status: 201, Body: []byte(`{"id":"ch_11"}`)}); err != nil {
		t.Fatal(err)
	}
	show := func() (int, ledger.Record, string) {
		var out, errb bytes.Buffer
		code := run([]string{"ledger", "show", "--url", url, "--tenant", "acme", "--operation", "charge", "--key", "order-11"}, &out, &errb)
		var rec ledger.Record
		_ = json.Unmarshal(out.Bytes(), &rec)
		return code, rec, errb.String()
	}
	if code, rec, _ := show(); code == 0 && string(rec.Outcome.Body) == `{"id":"ch_11"}` {
		t.Fatal("show printed the plaintext body without the encryption keys")
	}
	t.Setenv(ledgercli.EncryptionKeysEnv, base64.StdEncoding.EncodeToString(encKey))
	if code, rec, errs := show(); code != 0 || string(rec.Outcome.Body) != `{"id":"ch_11"}` {
		t.Fatalf("show with the keys: %d %q %s", code, rec.Outcome.Body, errs)
	}
}

// A store URL that does not parse is reported without the URL: it may
// hold the store's password.
func TestLedgerCommandNeverPrintsTheURL(t *testing.T) {
	t.Setenv(ledgercli.FingerprintKeyEnv, string(redistest.LedgerKey()))
	const password = "s3cretPassw0rd"
	for _, raw := range []string{
		"redis://user:" + password + "@host:6379/0?prefix=%zz",
		"redis://user:" + password + "@ho st:6379/0",
		"redis://user:" + password + "@host:notaport/0",
	} {
		var out, errb bytes.Buffer
		code := run([]string{"ledger", "list", "--url", raw}, &out, &errb)
		if code == 0 {
			t.Fatalf("list with %q succeeded", raw)
		}
		if strings.Contains(errb.String()+out.String(), password) {
			t.Fatalf("the error for %q prints the password: %s", raw, errb.String())
		}
	}
}

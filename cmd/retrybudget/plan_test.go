package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/budget"
)

// TestPlanGolden compares the whole text output for fixed inputs. Every
// figure below was worked out by hand from the rules in package plan:
// waits from BaseDelay·2^(n−2) ± Jitter, capped at MaxDelay; starts adding
// one attempt duration per earlier attempt; the deadline checked on every
// start.
func TestPlanGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{
			name: "stripe preset with a 30s deadline",
			args: []string{"plan", "--preset", "stripe", "--deadline", "30s"},
			want: `policy: preset stripe (api.stripe.com)
  max attempts     3
  backoff          500ms doubling, capped at 5s, jitter ±50%
  max wait         1m0s
  deadline         30s
  attempt timeout  none (every failing attempt assumed to take 1s)
  retry-after      none (assumed)
  budget           10% of first attempts, or 10 retries/s, over 10s
  first attempts   100/s (assumed)

attempt  wait before it  earliest start  latest start  fits 30s deadline
1        -               0s              0s            yes
2        250ms .. 750ms  1.25s           1.75s         yes
3        500ms .. 1.5s   2.75s           4.25s         yes

worst case: the call ends at the latest 5.25s after it starts, giving up with attempts_exhausted after attempt 3
amplification in a total outage: 1.1 attempts per call with the budget, 3 without it
  steady state: min(3, 1 + max(10%, 10 retries/s ÷ 100 first attempts/s)) = 1.1
`,
		},
		{
			name: "defaults: a deadline that one attempt may miss and one never reaches",
			args: []string{"plan", "--max-attempts", "5", "--deadline", "5s"},
			want: `policy: retrybudget defaults
  max attempts     5
  backoff          200ms doubling, capped at 30s, jitter ±50%
  max wait         1m0s
  deadline         5s
  attempt timeout  none (every failing attempt assumed to take 1s)
  retry-after      none (assumed)
  budget           10% of first attempts, or 10 retries/s, over 10s
  first attempts   100/s (assumed)

attempt  wait before it  earliest start  latest start  fits 5s deadline
1        -               0s              0s            yes
2        100ms .. 300ms  1.1s            1.3s          yes
3        200ms .. 600ms  2.3s            2.9s          yes
4        400ms .. 1.2s   3.7s            5.1s          maybe
5        800ms .. 2.4s   5.5s            8.5s          never: deadline
maybe: sent only when the waits before it come out short enough; otherwise the call gives up at once with ErrDeadline
never: never sent; the call gives up at once with ErrDeadline before it

worst case: the call ends at the latest 5s after it starts, giving up with deadline after attempt 4
amplification in a total outage: 1.1 attempts per call with the budget, 4 without it
  steady state: min(4, 1 + max(10%, 10 retries/s ÷ 100 first attempts/s)) = 1.1
`,
		},
		{
			name: "a Retry-After raises the waits; the wait after the last sendable attempt crosses the deadline",
			args: []string{"plan", "--max-attempts", "6", "--deadline", "5s", "--retry-after", "1s"},
			want: `policy: retrybudget defaults
  max attempts     6
  backoff          200ms doubling, capped at 30s, jitter ±50%
  max wait         1m0s
  deadline         5s
  attempt timeout  none (every failing attempt assumed to take 1s)
  retry-after      1s on every failure (assumed)
  budget           10% of first attempts, or 10 retries/s, over 10s
  first attempts   100/s (assumed)

attempt  wait before it            earliest start  latest start  fits 5s deadline
1        -                         0s              0s            yes
2        1s .. 1.1s (Retry-After)  2s              2.1s          yes
3        1s .. 1.1s (Retry-After)  4s              4.2s          yes
4        1s .. 1.2s (Retry-After)  6s              6.4s          never: deadline
5        1s .. 2.4s (Retry-After)  8s              9.8s          never: deadline
6        1.6s .. 4.8s              10.6s           15.6s         never: deadline
never: never sent; the call gives up at once with ErrDeadline before it

worst case: the call ends at the latest 5s after it starts, giving up with deadline after attempt 3
amplification in a total outage: 1.1 attempts per call with the budget, 3 without it
  steady state: min(3, 1 + max(10%, 10 retries/s ÷ 100 first attempts/s)) = 1.1
`,
		},
		{
			name: "a Retry-After beyond MaxWait ends the call after the first attempt",
			args: []string{"plan", "--preset", "github", "--retry-after", "90s", "--deadline", "10s", "--no-budget"},
			want: `policy: preset github (api.github.com)
  max attempts     3
  backoff          1s doubling, capped at 30s, jitter ±50%
  max wait         30s
  deadline         10s
  attempt timeout  none (every failing attempt assumed to take 1s)
  retry-after      1m30s on every failure (assumed)
  budget           none (budget.Unlimited)
  first attempts   100/s (assumed)

attempt  wait before it  earliest start  latest start  fits 10s deadline
1        -               0s              0s            yes
2        -               -               -             never: wait_too_long
3        -               -               -             never: wait_too_long
never: the Retry-After 1m30s is longer than MaxWait 30s, so the call gives up at once after attempt 1 with ErrWaitTooLong

worst case: the call ends at the latest 1s after it starts, giving up with wait_too_long after attempt 1
amplification in a total outage: 1 attempt per call (no budget)
`,
		},
		{
			name: "flags override the preset; the floor sets the budget's bound at a low rate",
			args: []string{"plan", "--preset", "openai", "--deadline", "10s", "--attempt-timeout", "2s", "--rps", "20", "--budget-percent", "5%"},
			want: `policy: preset openai (api.openai.com)
  max attempts     3
  backoff          500ms doubling, capped at 8s, jitter ±50%
  max wait         1m0s
  deadline         10s
  attempt timeout  2s (every failing attempt assumed to take it)
  retry-after      none (assumed)
  budget           5% of first attempts, or 10 retries/s, over 10s
  first attempts   20/s (assumed)

attempt  wait before it  earliest start  latest start  fits 10s deadline
1        -               0s              0s            yes
2        250ms .. 750ms  2.25s           2.75s         yes
3        500ms .. 1.5s   4.75s           6.25s         yes

worst case: the call ends at the latest 8.25s after it starts, giving up with deadline after attempt 3
amplification in a total outage: 1.5 attempts per call with the budget, 3 without it
  steady state: min(3, 1 + max(5%, 10 retries/s ÷ 20 first attempts/s)) = 1.5
`,
		},
		{
			name: "no jitter, no deadline",
			args: []string{"plan", "--jitter", "-1", "--max-attempts", "3", "--base-delay", "1s", "--attempt-timeout", "500ms"},
			want: `policy: retrybudget defaults
  max attempts     3
  backoff          1s doubling, capped at 30s, no jitter
  max wait         1m0s
  deadline         none
  attempt timeout  500ms (every failing attempt assumed to take it)
  retry-after      none (assumed)
  budget           10% of first attempts, or 10 retries/s, over 10s
  first attempts   100/s (assumed)

attempt  wait before it  earliest start  latest start  fits deadline
1        -               0s              0s            yes
2        1s              1.5s            1.5s          yes
3        2s              4s              4s            yes

worst case: the call ends at the latest 4.5s after it starts, giving up with attempts_exhausted after attempt 3
amplification in a total outage: 1.1 attempts per call with the budget, 3 without it
  steady state: min(3, 1 + max(10%, 10 retries/s ÷ 100 first attempts/s)) = 1.1
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
			}
			if got := stdout.String(); got != tc.want {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, tc.want)
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
		})
	}
}

// TestPlanFlagsOverrideOnlyWhatIsSet checks that a flag replaces one field
// of the preset and leaves the others, and that a flag left out keeps the
// preset's value, not the flag's zero.
func TestPlanFlagsOverrideOnlyWhatIsSet(t *testing.T) {
	out := planOutput(t, "--preset", "stripe", "--max-attempts", "5", "--max-wait", "10s")
	for _, want := range []string{
		"  max attempts     5\n",
		"  backoff          500ms doubling, capped at 5s, jitter ±50%\n", // the preset's
		"  max wait         10s\n",
		"  deadline         none\n",
		"5        2s .. 5s        ", // 4s ± 2s, capped at the preset's 5s
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanPercentFlagTakesAFractionOrAPercentage(t *testing.T) {
	a := planOutput(t, "--budget-percent", "25%", "--rps", "1000")
	b := planOutput(t, "--budget-percent", "0.25", "--rps", "1000")
	if a != b {
		t.Errorf("25%% and 0.25 differ:\n%s\n%s", a, b)
	}
	if !strings.Contains(a, "1.25 attempts per call with the budget") {
		t.Errorf("want 1 + max(25%%, 10/1000) = 1.25:\n%s", a)
	}
}

func TestPlanOut(t *testing.T) {
	for _, format := range []string{"text", "svg"} {
		t.Run(format, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "plan."+format)
			var stdout, stderr bytes.Buffer
			if code := run([]string{"plan", "--format", format, "--out", name}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout not empty with --out: %q", stdout.String())
			}
			got, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			want := planOutput(t, "--format", format)
			if string(got) != want {
				t.Errorf("file:\n%s\nstdout without --out:\n%s", got, want)
			}
		})
	}
	var stderr bytes.Buffer
	if code := run([]string{"plan", "--out", filepath.Join(t.TempDir(), "no", "such", "dir")}, &bytes.Buffer{}, &stderr); code != 1 {
		t.Errorf("unwritable --out: exit %d, want 1", code)
	}
}

func TestPlanUsageErrors(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		code      int
		stderrHas string
	}{
		{"unknown preset", []string{"--preset", "acme"}, 2, `unknown preset "acme" (want one of github, openai, paypal, shopify, slack, stripe, twilio)`},
		{"unknown format", []string{"--format", "png"}, 2, `unknown format "png"`},
		{"zero rate", []string{"--rps", "0"}, 2, "--rps must be above 0"},
		{"bad percent", []string{"--budget-percent", "ten"}, 2, `want a fraction such as 0.1 or a percentage such as "10%"`},
		{"too many attempts", []string{"--max-attempts", "1001"}, 2, "at most 1000"},
		{"stray argument", []string{"stripe"}, 2, `unexpected argument "stripe"`},
		{"unknown flag", []string{"--nope"}, 2, "flag provided but not defined"},
		{"help", []string{"-h"}, 0, "-attempt-timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"plan"}, tc.args...), &stdout, &stderr); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.stderrHas) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.stderrHas)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %q", stdout.String())
			}
		})
	}
}

// TestBudgetNote: a Budget the planner cannot read is said to be assumed,
// not silently replaced by the default.
func TestBudgetNote(t *testing.T) {
	if n := budgetNote(nil); n != "" {
		t.Errorf("nil Budget: %q", n)
	}
	if n := budgetNote(budget.Unlimited{}); n != "" {
		t.Errorf("budget.Unlimited: %q", n)
	}
	n := budgetNote(budget.NewLocal(budget.Config{Percent: 0.5}))
	if !strings.Contains(n, "*budget.Local") || !strings.Contains(n, "default rule is assumed") {
		t.Errorf("budget.Local: %q", n)
	}
}

// planOutput runs "retrybudget plan args..." and returns its stdout.
func planOutput(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"plan"}, args...), &stdout, &stderr); code != 0 {
		t.Fatalf("plan %v: exit %d: %s", args, code, stderr.String())
	}
	return stdout.String()
}

// TestPlanREADMEExamples runs every "$ go run ./cmd/retrybudget plan ..."
// example of plan/README.md and checks that the output printed there is
// what the command prints now (its tail, where the README leaves the
// policy header out).
func TestPlanREADMEExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "plan", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "$ go run ./cmd/retrybudget "
	examples := 0
	for _, block := range strings.Split(string(doc), "```text\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		cmd, printed, ok := strings.Cut(block, "\n")
		if !ok || !strings.HasPrefix(cmd, prompt) {
			continue
		}
		examples++
		args := strings.Fields(strings.TrimPrefix(cmd, prompt))
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", cmd, code, stderr.String())
		}
		if !strings.HasSuffix(stdout.String(), printed) {
			t.Errorf("%s: README shows\n%s\nthe command prints\n%s", cmd, printed, stdout.String())
		}
	}
	if examples < 2 {
		t.Errorf("found %d examples in plan/README.md, want 2", examples)
	}
}

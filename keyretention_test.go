package retrybudget

import (
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

func TestKeyLapsedReadsTheStoreClock(t *testing.T) {
	created := time.Unix(1_700_000_000, 0)
	grant := func(after time.Duration) ledger.Record {
		return ledger.Record{CreatedAt: created, Attempts: []ledger.Attempt{
			{At: created, Class: "created"}, {At: created.Add(after), Class: "resend"},
		}}
	}
	for _, c := range []struct {
		name      string
		retention time.Duration
		rec       ledger.Record
		want      bool
	}{
		{"no retention declared", 0, grant(1000 * time.Hour), false},
		{"within the window", 6 * time.Hour, grant(6*time.Hour - time.Second), false},
		{"at the window's end", 6 * time.Hour, grant(6 * time.Hour), true},
		{"past the window", 6 * time.Hour, grant(7 * time.Hour), true},
		{"no creation time", 6 * time.Hour, ledger.Record{Attempts: grant(0).Attempts}, true},
		{"no history", 6 * time.Hour, ledger.Record{CreatedAt: created}, true},
	} {
		if got := keyLapsed(c.retention, c.rec); got != c.want {
			t.Errorf("%s: keyLapsed = %v; want %v", c.name, got, c.want)
		}
	}
}

package riverjobs_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
)

// With a shared limiter boundary saturated, the jobs of a tenant over its
// share are snoozed, visible in River's queue with the time they run, and
// release their worker at once; a small tenant queued behind the backlog
// is served within its share instead of waiting for the backlog to drain.
func TestOverShareJobsAreSnoozedNotHeld(t *testing.T) {
	const (
		bigJobs   = 60
		smallJobs = 6
		maxWait   = 100 * time.Millisecond
	)
	lim, err := limiter.NewLocal(limiter.LocalConfig{Limits: []limiter.Limit{limiter.PerSecond(20)}, OwnerShare: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{workers: 8, transport: retrybudget.Config{Limiter: lim, MaxWait: maxWait}})
	for i := range bigJobs {
		h.insert(t, PaymentArgs{Tenant: "big", Order: fmt.Sprintf("big-%d", i), Amount: 1}, nil)
	}
	for i := range smallJobs {
		h.insert(t, PaymentArgs{Tenant: "small", Order: fmt.Sprintf("small-%d", i), Amount: 1}, nil)
	}

	var (
		bigDone, smallDone, snoozes int
		bigBeforeSmall              = -1 // big completions when the last small one completed
		longestSnoozedRun           time.Duration
	)
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
	for bigDone < bigJobs || smallDone < smallJobs {
		select {
		case <-timeout.C:
			t.Fatalf("completed big %d/%d, small %d/%d within 60s", bigDone, bigJobs, smallDone, smallJobs)
		case ev := <-h.events:
			small := strings.Contains(string(ev.Job.EncodedArgs), `"small"`)
			switch ev.Kind {
			case river.EventKindJobCompleted:
				if small {
					smallDone++
					if smallDone == smallJobs {
						bigBeforeSmall = bigDone
					}
				} else {
					bigDone++
				}
			case river.EventKindJobSnoozed:
				snoozes++
				longestSnoozedRun = max(longestSnoozedRun, ev.JobStats.RunDuration)
				r := report(t, ev.Job)
				if r.Verb != "snoozed" || !strings.Contains(r.Reason, "rate limit") || r.RetryAt == nil {
					t.Errorf("snoozed job %d: report %+v; want snoozed by the rate limit with a retry-at", ev.Job.ID, r)
				}
				// The queue shows when it runs again: the limiter's time.
				if r.RetryAt != nil && ev.Job.ScheduledAt.Before(r.RetryAt.Add(-time.Millisecond)) {
					t.Errorf("snoozed job %d scheduled at %v, before its retry-at %v", ev.Job.ID, ev.Job.ScheduledAt, r.RetryAt)
				}
			default:
				t.Errorf("job %d: unexpected %s: %s", ev.Job.ID, ev.Kind, ev.Job.Metadata)
			}
		}
	}
	t.Logf("snoozes %d; big jobs completed before the last small one: %d of %d; longest snoozed run %v",
		snoozes, bigBeforeSmall, bigJobs, longestSnoozedRun)
	if snoozes == 0 {
		t.Error("no job was snoozed: the boundary was never saturated")
	}
	// A snoozed run gave its worker back after at most MaxWait of waiting
	// (the slack covers the ledger, the database and -race).
	if longestSnoozedRun > maxWait+time.Second {
		t.Errorf("a snoozed run held its worker %v; want about MaxWait (%v) at most", longestSnoozedRun, maxWait)
	}
	// FIFO without shares would finish the whole big backlog first.
	if bigBeforeSmall > bigJobs*3/4 {
		t.Errorf("%d of %d big jobs completed before the small tenant's last; want the small tenant served within its share", bigBeforeSmall, bigJobs)
	}
	if s := h.provider.Stats(); s.Effects != bigJobs+smallJobs || s.Duplicates != 0 {
		t.Errorf("effects %d, duplicates %d; want %d, 0", s.Effects, s.Duplicates, bigJobs+smallJobs)
	}
}

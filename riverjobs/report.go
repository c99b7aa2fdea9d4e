package riverjobs

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// Report is what the Middleware writes into a job's metadata, under
// MetadataKey, after every run: the job's Action, the Outcome of the
// provider call the run was decided on (the first that holds, else the
// last) and the verb River was given, so an operator reading the
// job sees why it waits, was cancelled or is held.
type Report struct {
	// Verb is the Verb's name: "completed", "snoozed", "cancelled", "held",
	// "retried" or "worker".
	Verb string `json:"verb"`
	// Tenant, Operation and ActionKey are the job's Action.
	Tenant    string `json:"tenant,omitempty"`
	Operation string `json:"operation,omitempty"`
	ActionKey string `json:"action_key,omitempty"`
	// Key is the idempotency key sent to the provider.
	Key string `json:"key,omitempty"`
	// Class is the class of the decided call's last attempt.
	Class string `json:"class,omitempty"`
	// Status is the decided call's response status code; 0 without one.
	Status int `json:"status,omitempty"`
	// Attempts is the number of provider attempts in this run.
	Attempts int `json:"attempts"`
	// TotalAttempts adds up Attempts over every run that reported.
	TotalAttempts int `json:"total_attempts"`
	// Calls is the number of provider calls in this run.
	Calls int `json:"calls"`
	// Runs counts the runs of the job that reported, this one included
	// (a run whose worker died reports nothing).
	Runs int `json:"runs"`
	// Replayed reports that the decided call was answered by the ledger
	// from an earlier run: nothing was sent.
	Replayed bool `json:"replayed,omitempty"`
	// Reason says why the job did not complete: the Transport's reason or
	// the worker's error. Empty on completion.
	Reason string `json:"reason,omitempty"`
	// RetryAt is when the job runs again: the snooze's end, or the floor
	// of River's retry. Nil when none applies.
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// At is when the run ended.
	At time.Time `json:"at"`
	// FirstRun is when the job's first run started, or, when that run
	// reported nothing (its worker died), when the job was created: the
	// records of the job's actions live at least Config.Retention from
	// then.
	FirstRun time.Time `json:"first_run"`
}

// ReportOf reads the Report the Middleware wrote into job's metadata. It
// reports false when there is none.
func ReportOf(job *rivertype.JobRow) (Report, bool, error) {
	return reportIn(job.Metadata)
}

// reportIn reads the Report from raw job metadata.
func reportIn(metadata []byte) (Report, bool, error) {
	if len(metadata) == 0 {
		return Report{}, false, nil
	}
	var m struct {
		Report *Report `json:"retrybudget"`
	}
	if err := json.Unmarshal(metadata, &m); err != nil {
		return Report{}, false, fmt.Errorf("riverjobs: job metadata: %w", err)
	}
	if m.Report == nil {
		return Report{}, false, nil
	}
	return *m.Report, true, nil
}

// snoozesIn returns the snooze count River keeps in a job's metadata.
func snoozesIn(metadata []byte) int {
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(metadata, &m) // River wrote it: absent or bad means none
	return m.Snoozes
}

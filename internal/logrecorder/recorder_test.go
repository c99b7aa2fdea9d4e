package logrecorder

import (
	"log/slog"
	"testing"
)

func TestRecorder(t *testing.T) {
	var h Recorder
	slog.New(&h).Warn("budget: redis unavailable", "policy", "fail-open")
	slog.New(&h).Info("budget: redis available again")
	got := h.All()
	if len(got) != 2 || got[0] != "WARN budget: redis unavailable policy=fail-open" || got[1] != "INFO budget: redis available again" {
		t.Fatalf("records %q", got)
	}
	h.Reset()
	if len(h.All()) != 0 {
		t.Fatal("Reset kept records")
	}
}

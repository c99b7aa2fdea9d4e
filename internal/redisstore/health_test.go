package redisstore

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestTracker(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	h := NewTracker("limiter", "fail-closed", time.Second, logger)
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	boom := errors.New("boom")

	if ok, _ := h.Attempt(t0); !ok || h.Down() {
		t.Fatal("healthy tracker refused an attempt")
	}
	h.Failed(t0, boom)
	h.Failed(t0, boom) // a second failure is not logged again
	if ok, err := h.Attempt(t0.Add(999 * time.Millisecond)); ok || err != boom || !h.Down() {
		t.Fatalf("attempt within the probe interval = %v, %v; want false, boom", ok, err)
	}
	if !h.NextProbe().Equal(t0.Add(time.Second)) {
		t.Fatalf("next probe %v; want t0+1s", h.NextProbe())
	}
	if ok, _ := h.Attempt(t0.Add(time.Second)); !ok {
		t.Fatal("no probe after the interval")
	}
	// One probe per interval, even while the first is still out.
	if ok, _ := h.Attempt(t0.Add(time.Second + time.Millisecond)); ok {
		t.Fatal("second probe in the same interval")
	}
	h.Succeeded()
	h.Succeeded()
	if ok, _ := h.Attempt(t0.Add(time.Second + 2*time.Millisecond)); !ok || h.Down() {
		t.Fatal("recovered tracker refused an attempt")
	}
	want := "level=WARN msg=\"limiter: redis unavailable\" policy=fail-closed retry_in=1s err=boom\n" +
		"level=INFO msg=\"limiter: redis available again\"\n"
	if buf.String() != want {
		t.Fatalf("logs %q; want %q", buf.String(), want)
	}

	// A nil logger is silent, and fine.
	quiet := NewTracker("budget", "fail-open", time.Second, nil)
	quiet.Failed(t0, boom)
	quiet.Succeeded()
	if strings.Contains(buf.String(), "budget") {
		t.Fatal("a nil logger logged")
	}
}

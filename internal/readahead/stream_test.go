package readahead

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// A body that sends one event and then stalls, as a server-sent events
// stream or a long poll does, is served to the caller as it arrives: the
// caller reads the first event without waiting for the limit or the end.
func TestReadServesAStreamAsItArrives(t *testing.T) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	const event = "data: one\n\n"
	go pw.Write([]byte(event))
	resp := &http.Response{Body: pr}
	if _, ok := Read(resp, 1<<20, 20*time.Millisecond); ok {
		t.Fatal("a stalled stream read as complete")
	}
	got := make(chan string, 1)
	go func() {
		b := make([]byte, len(event))
		n, _ := io.ReadFull(resp.Body, b)
		got <- string(b[:n])
	}()
	select {
	case s := <-got:
		if s != event {
			t.Fatalf("caller read %q, want %q", s, event)
		}
	case <-time.After(5 * time.Second):
		pw.Close() // releases the reader, and its goroutine
		t.Fatal("the first event was not readable while the stream stayed open")
	}
	// The rest of the stream follows, then its end.
	go func() { pw.Write([]byte("data: two\n\n")); pw.Close() }()
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "data: two\n\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
	resp.Body.Close()
}

// While the read-ahead still waits for a stream's limit, the caller reads
// every byte that arrived, in order, however the stream is cut.
func TestReadServesEveryByteInOrder(t *testing.T) {
	pr, pw := io.Pipe()
	resp := &http.Response{Body: pr}
	go func() {
		for _, s := range []string{"a", "bc", "def", "ghij"} {
			pw.Write([]byte(s))
		}
		pw.Close()
	}()
	buf, ok := Read(resp, 1<<20, time.Minute)
	rest, err := io.ReadAll(resp.Body)
	if !ok || string(buf) != "abcdefghij" || err != nil || string(rest) != "abcdefghij" {
		t.Fatalf("Read %q %v; caller read %q, %v", buf, ok, rest, err)
	}
}

package readahead

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	t.Run("complete body", func(t *testing.T) {
		resp := &http.Response{Body: io.NopCloser(strings.NewReader("hello"))}
		buf, ok := Read(resp, 16, time.Second)
		rest, _ := io.ReadAll(resp.Body)
		if !ok || string(buf) != "hello" || string(rest) != "hello" {
			t.Fatalf("got %q %v, caller read %q; want the body, and the caller still reads it", buf, ok, rest)
		}
	})
	t.Run("larger than the limit", func(t *testing.T) {
		resp := &http.Response{Body: io.NopCloser(strings.NewReader("hello world"))}
		_, ok := Read(resp, 5, time.Second)
		rest, _ := io.ReadAll(resp.Body)
		if ok || string(rest) != "hello world" {
			t.Fatalf("ok %v, caller read %q; want false and the whole body", ok, rest)
		}
	})
	t.Run("stalled body", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() { pw.Write([]byte("he")) }()
		resp := &http.Response{Body: pr}
		start := time.Now()
		_, ok := Read(resp, 16, 20*time.Millisecond)
		if ok || time.Since(start) > time.Second {
			t.Fatalf("ok %v after %v; want false at the wait", ok, time.Since(start))
		}
		go func() { pw.Write([]byte("llo")); pw.Close() }()
		rest, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(rest) != "hello" {
			t.Fatalf("caller read %q; want every byte", rest)
		}
	})
}

package readahead

import (
	"io"
	"net/http"
	"runtime"
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

func TestReadAllocatesForTheBodyNotForAChunk(t *testing.T) {
	// Most bodies read ahead are small (a charge's JSON, a problem
	// document): the read-ahead's buffers are sized by the body, whether
	// its length is known or not, never a chunk per call.
	body := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name   string
		length int64
	}{{"length known", int64(len(body))}, {"length unknown", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			read := func() {
				resp := &http.Response{Body: io.NopCloser(strings.NewReader(body)), ContentLength: tc.length}
				if buf, ok := Read(resp, 64<<10, time.Minute); !ok || len(buf) != len(body) {
					t.Fatalf("Read: %d bytes, %v; want the body", len(buf), ok)
				}
				resp.Body.Close()
			}
			const runs = 200
			read()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				read()
			}
			runtime.ReadMemStats(&after)
			// A chunk is 32 KiB; the body, its copy and the bookkeeping
			// (a goroutine's closure, channels, a timer) fit in 4 KiB.
			if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 4<<10 {
				t.Fatalf("%d bytes allocated per Read of a %d-byte body; want at most 4 KiB", per, len(body))
			}
		})
	}
}

func TestReadOfALongBodyGrowsItsReads(t *testing.T) {
	// A body longer than the first read, of unknown length or longer than
	// announced, still reads ahead whole, up to the limit.
	body := strings.Repeat("0123456789", 10_000)
	for _, length := range []int64{-1, 10, int64(len(body))} {
		resp := &http.Response{Body: io.NopCloser(strings.NewReader(body)), ContentLength: length}
		buf, ok := Read(resp, int64(len(body)), time.Minute)
		rest, _ := io.ReadAll(resp.Body)
		if !ok || string(buf) != body || string(rest) != body {
			t.Fatalf("ContentLength %d: read ahead %d bytes, %v, caller read %d; want the whole body twice", length, len(buf), ok, len(rest))
		}
	}
}

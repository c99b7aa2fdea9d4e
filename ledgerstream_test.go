package retrybudget

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// A ledgered call whose answer is a stream (server-sent events, a long
// poll) hands the caller each event as the provider sends it, while the
// ledger still reads ahead to record the answer: the provider here sends
// its second event, and ends, only once the caller has read the first.
func TestLedgeredStreamIsReadableAsItArrives(t *testing.T) {
	for _, contentType := range []string{"text/event-stream", "application/json"} {
		t.Run(contentType, func(t *testing.T) {
			firstRead := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", contentType)
				io.WriteString(w, "data: one\n\n")
				http.NewResponseController(w).Flush()
				select {
				case <-firstRead:
					io.WriteString(w, "data: two\n\n")
				case <-r.Context().Done():
				}
			}))
			t.Cleanup(srv.Close)
			tr := New(Config{Ledger: LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}})
			t.Cleanup(tr.CloseIdleConnections)
			ctx := WithAction(context.Background(), Action{Operation: "complete", Key: "stream-1"})
			resp, err := post(ctx, t, tr, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			first := make(chan string, 1)
			go func() {
				line, _ := br.ReadString('\n')
				first <- line
			}()
			select {
			case line := <-first:
				if line != "data: one\n" {
					t.Fatalf("first line %q", line)
				}
			case <-time.After(10 * time.Second):
				resp.Body.Close() // ends the read-ahead and the reader
				t.Fatal("the first event was not readable while the stream stayed open")
			}
			close(firstRead)
			rest, err := io.ReadAll(br)
			if err != nil || string(rest) != "\ndata: two\n\n" {
				t.Fatalf("rest of the stream %q, %v", rest, err)
			}
		})
	}
}

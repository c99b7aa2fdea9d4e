package pgledger_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The parent passes the helper process its database in these variables;
// helperURLEnv also marks a process as the helper.
const (
	helperURLEnv    = "PGLEDGER_TEST_HELPER_URL"
	helperSchemaEnv = "PGLEDGER_TEST_HELPER_SCHEMA"
)

// TestAtomicServerKilledAfterEffect kills the server process (SIGKILL)
// after its handler did its effect in the action's transaction and before
// it answered. The retry, on another server, waits out the dead one's
// lease, runs the action (the killed transaction took its effect with it)
// and stores the outcome; the next retry replays it. One effect in all.
func TestAtomicServerKilledAfterEffect(t *testing.T) {
	db := newEffectsDB(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAtomicHelperProcess$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), helperURLEnv+"="+db.url, helperSchemaEnv+"="+db.schema)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()         //nolint:errcheck // killed below
	defer cmd.Process.Kill() //nolint:errcheck // already dead when the test passes
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	expect := func(prefix string) string {
		t.Helper()
		for l := range lines {
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				return rest
			}
		}
		t.Fatalf("helper exited before printing %q", prefix)
		return ""
	}
	addr := expect("LISTEN ")

	sent := make(chan error, 1)
	go func() {
		_, err := post(t, "http://"+addr, "k1")
		sent <- err
	}()
	expect("EFFECT")
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err == nil {
		t.Fatal("the killed server answered")
	}
	if n := db.effects(t); n != 0 {
		t.Fatalf("%d effects committed by the killed server, want 0", n)
	}

	srv := httptest.NewServer(atomicServer(db.pool, nil))
	defer srv.Close()
	retry := retryUntilSettled(t, srv.URL, "k1")
	if retry.status != http.StatusCreated || retry.replayed {
		t.Fatalf("retry %+v, want the action run", retry)
	}
	again, err := post(t, srv.URL, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if !again.replayed || again.body != retry.body {
		t.Fatalf("second retry %+v, want %q replayed", again, retry.body)
	}
	if n := db.effects(t); n != 1 {
		t.Fatalf("%d effects, want exactly 1", n)
	}
}

// TestAtomicHelperProcess is the server TestAtomicServerKilledAfterEffect
// kills. It does nothing unless run as that helper.
func TestAtomicHelperProcess(t *testing.T) {
	if os.Getenv(helperURLEnv) == "" {
		t.Skip("helper process of TestAtomicServerKilledAfterEffect")
	}
	db := effectsDB{url: os.Getenv(helperURLEnv), schema: os.Getenv(helperSchemaEnv)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := atomicServer(db.open(t, ""), func(r *http.Request) {
		fmt.Println("EFFECT")
		<-r.Context().Done() // until killed
	})
	fmt.Println("LISTEN " + ln.Addr().String())
	_ = http.Serve(ln, h)
}

package retrybudget

// The fixtures of the hostile-provider tests (hostile_test.go): raw TCP
// servers that trickle, stall or hang up, bodies that never end or stall,
// and a base transport that counts the bytes read off the wire.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hostileSlack is added to every time bound: scheduling on a loaded CI
// machine, not the Transport, is what it absorbs.
const hostileSlack = time.Second

// wireCounter counts, per connection, the bytes a client read off the wire.
type wireCounter struct {
	mu    sync.Mutex // guards conns
	conns []*atomic.Int64
}

// read returns the bytes read on each connection, in dial order.
func (w *wireCounter) read() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := make([]int64, len(w.conns))
	for i, c := range w.conns {
		n[i] = c.Load()
	}
	return n
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// hostileBase returns a base transport of the test's own, whose
// connections count the bytes they read, and whose idle connections are
// closed when the test ends so that goleak sees no read or write loop.
func hostileBase(t *testing.T) (*http.Transport, *wireCounter) {
	t.Helper()
	wc := &wireCounter{}
	var d net.Dialer
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		n := &atomic.Int64{}
		wc.mu.Lock()
		wc.conns = append(wc.conns, n)
		wc.mu.Unlock()
		return countingConn{Conn: c, n: n}, nil
	}}
	t.Cleanup(base.CloseIdleConnections)
	return base, wc
}

// rawServer is a TCP server for misbehaviour below HTTP that httptest
// cannot produce: it reads and discards whatever the client sends, and
// writes what its handler writes, byte by byte if it likes.
type rawServer struct {
	ln      net.Listener
	handle  func(c net.Conn, gone <-chan struct{})
	wg      sync.WaitGroup
	mu      sync.Mutex // guards conns, gone and written
	conns   []net.Conn
	gone    []chan struct{}
	written int64
}

// newRawServer starts a rawServer. handle runs once per connection; it
// must return once gone is closed, which happens when the client closes
// the connection or the test ends.
func newRawServer(t *testing.T, handle func(c net.Conn, gone <-chan struct{})) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, handle: handle}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *rawServer) URL() string { return "http://" + s.ln.Addr().String() }

func (s *rawServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		gone := make(chan struct{})
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.gone = append(s.gone, gone)
		s.mu.Unlock()
		s.wg.Add(2)
		asked := make(chan struct{})
		go func() {
			// Reading is how the server learns that the client went away.
			defer s.wg.Done()
			defer close(gone)
			r := bufio.NewReader(c)
			if _, err := http.ReadRequest(r); err != nil {
				return
			}
			close(asked)
			io.Copy(io.Discard, r)
		}()
		go func() {
			defer s.wg.Done()
			defer c.Close()
			// Answer only once asked: net/http drops bytes that arrive
			// before its request as an unsolicited response.
			select {
			case <-asked:
			case <-gone:
				return
			}
			s.handle(countedWriter{Conn: c, s: s}, gone)
		}()
	}
}

// close stops accepting, tears down every connection and waits for the
// handlers, so no server goroutine outlives the test.
func (s *rawServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// accepted returns the number of connections accepted so far.
func (s *rawServer) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// waitGone fails t unless every connection accepted so far was closed
// within d: the client tore it down rather than leaving it open.
func (s *rawServer) waitGone(t *testing.T, d time.Duration) {
	t.Helper()
	s.mu.Lock()
	gone := append([]chan struct{}(nil), s.gone...)
	s.mu.Unlock()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for i, g := range gone {
		select {
		case <-g:
		case <-timer.C:
			t.Fatalf("connection %d of %d still open %v after the call; want it torn down", i+1, len(gone), d)
		}
	}
}

type countedWriter struct {
	net.Conn
	s *rawServer
}

func (c countedWriter) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.s.mu.Lock()
	c.s.written += int64(n)
	c.s.mu.Unlock()
	return n, err
}

// trickle writes msg one byte per tick, then, when forever is set, one
// more byte of filler per tick until the client goes away.
func trickle(msg string, tick time.Duration, forever bool) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, gone <-chan struct{}) {
		tk := time.NewTicker(tick)
		defer tk.Stop()
		for i := 0; forever || i < len(msg); i++ {
			b := byte('a')
			if i < len(msg) {
				b = msg[i]
			}
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			select {
			case <-tk.C:
			case <-gone:
				return
			}
		}
		<-gone
	}
}

// silent accepts the connection and the request, and never answers.
func silent(c net.Conn, gone <-chan struct{}) { <-gone }

// reply writes msg at once, then keeps the connection open without a word.
func reply(msg string) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, gone <-chan struct{}) {
		io.WriteString(c, msg)
		<-gone
	}
}

// hangUp closes the connection as soon as the request is read.
func hangUp(c net.Conn, gone <-chan struct{}) {}

// endlessBody answers code with a body that never ends: 1 KiB chunks as
// fast as the client takes them, until the connection breaks. It counts
// the bytes the server managed to write and signals ended when it stops.
type endlessBody struct {
	code    int
	header  []string // key, value pairs
	written atomic.Int64
	ended   chan struct{}
}

func newEndlessBody(code int, kv ...string) *endlessBody {
	return &endlessBody{code: code, header: kv, ended: make(chan struct{}, 16)}
}

func (e *endlessBody) serve(w http.ResponseWriter, r *http.Request) {
	defer func() { e.ended <- struct{}{} }()
	for i := 0; i+1 < len(e.header); i += 2 {
		w.Header().Set(e.header[i], e.header[i+1])
	}
	// Should a failing test leave the body open and unread, the write
	// deadline, not the provider's Close, ends the handler.
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(10 * time.Second))
	w.WriteHeader(e.code)
	chunk := bytes.Repeat([]byte("x"), 1<<10)
	for r.Context().Err() == nil {
		n, err := w.Write(chunk)
		e.written.Add(int64(n))
		if err != nil {
			return
		}
	}
}

// waitEnded fails t unless the endless writer stopped within d: the client
// tore the connection down instead of leaving the server writing.
func (e *endlessBody) waitEnded(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-e.ended:
	case <-time.After(d):
		t.Fatalf("the server was still writing the endless body %v later; want the connection torn down", d)
	}
}

// stalledBody answers code, writes a few bytes of a body declared much
// longer, and then stalls until the client goes away or the test ends.
func stalledBody(t *testing.T, code int, kv ...string) step {
	// t.Context ends before the provider's Close waits for its handlers,
	// even when a failing test left a response open.
	release := t.Context().Done()
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.Header().Set("Content-Length", "1000000")
		w.WriteHeader(code)
		io.WriteString(w, "{")
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
}

// elapsedWithin fails t when d exceeds bound plus hostileSlack.
func elapsedWithin(t *testing.T, what string, d, bound time.Duration) {
	t.Helper()
	if d > bound+hostileSlack {
		t.Fatalf("%s took %v; want within %v (+%v slack)", what, d, bound, hostileSlack)
	}
}

// asError fails t unless err is an *Error, and returns it.
func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v; want *Error", err, err)
	}
	return e
}

// trickledBody answers code with a body declared 1 MB long and sends it one
// byte per tick, until the client goes away or the test ends.
func trickledBody(t *testing.T, code int, tick time.Duration, kv ...string) step {
	release := t.Context().Done()
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.Header().Set("Content-Length", "1000000")
		w.WriteHeader(code)
		rc := http.NewResponseController(w)
		tk := time.NewTicker(tick)
		defer tk.Stop()
		for {
			if _, err := io.WriteString(w, "x"); err != nil || rc.Flush() != nil {
				return
			}
			select {
			case <-tk.C:
			case <-r.Context().Done():
				return
			case <-release:
				return
			}
		}
	}
}

package pgtest

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// CutMode says what an armed CutProxy does to the first COMMIT it sees.
type CutMode int32

// The modes of a CutProxy.
const (
	// PassThrough forwards everything.
	PassThrough CutMode = iota
	// CutBeforeCommit closes both sides instead of forwarding COMMIT: the
	// commit never runs, and the client cannot know it.
	CutBeforeCommit
	// CutAfterCommit forwards COMMIT, then closes both sides instead of
	// forwarding its answer: the commit ran, and the client cannot know it.
	CutAfterCommit
)

// CutProxy is a TCP proxy in front of PostgreSQL that breaks the first
// connection sending COMMIT once armed, as its CutMode says, then passes
// everything through again. pgx sends a transaction's COMMIT as a
// simple-protocol Query message whose text is "commit". Clients must
// connect in plain text (no TLS) for the proxy to see it.
type CutProxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32 // a CutMode; back to PassThrough after one cut
	cuts   atomic.Int32
	wg     sync.WaitGroup
}

// StartCutProxy starts a CutProxy on a loopback port forwarding to target
// ("host:port"), passing everything through until Arm. t.Cleanup stops it
// and closes every connection.
func StartCutProxy(t testing.TB, target string) *CutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CutProxy{ln: ln, target: target}
	p.wg.Go(p.serve)
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

// Addr returns the proxy's address, for the client to connect to.
func (p *CutProxy) Addr() *net.TCPAddr { return p.ln.Addr().(*net.TCPAddr) }

// Arm makes the proxy cut the next COMMIT as m says.
func (p *CutProxy) Arm(m CutMode) { p.mode.Store(int32(m)) }

// Cuts returns how many connections the proxy has cut.
func (p *CutProxy) Cuts() int { return int(p.cuts.Load()) }

func (p *CutProxy) serve() {
	var conns sync.WaitGroup
	defer conns.Wait()
	var (
		mu   sync.Mutex // guards open
		open []net.Conn
	)
	defer func() {
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		mu.Lock()
		open = append(open, client, server)
		mu.Unlock()
		var swallow atomic.Bool // set once COMMIT went through in CutAfterCommit
		conns.Go(func() {
			defer server.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := client.Read(buf)
				if n > 0 {
					chunk := buf[:n]
					if bytes.Contains(chunk, []byte("commit\x00")) {
						switch CutMode(p.mode.Load()) {
						case CutBeforeCommit:
							if p.mode.CompareAndSwap(int32(CutBeforeCommit), int32(PassThrough)) {
								p.cuts.Add(1)
								client.Close()
								return
							}
						case CutAfterCommit:
							if p.mode.CompareAndSwap(int32(CutAfterCommit), int32(PassThrough)) {
								swallow.Store(true)
							}
						}
					}
					if _, err := server.Write(chunk); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
		conns.Go(func() {
			defer client.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 && swallow.Load() {
					// The server answered COMMIT: it ran. Lose the answer.
					p.cuts.Add(1)
					server.Close()
					return
				}
				if n > 0 {
					if _, err := client.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	}
}

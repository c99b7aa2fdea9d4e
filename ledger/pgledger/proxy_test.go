package pgledger_test

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Cut modes of a cutProxy.
const (
	passThrough  = iota
	dropCommit   // close both sides instead of forwarding COMMIT: it never runs
	dropCommitOK // forward COMMIT, then close both sides instead of forwarding its answer
)

// cutProxy is a TCP proxy in front of PostgreSQL that breaks the first
// connection sending COMMIT once armed, in the mode armed. pgx sends a
// transaction's COMMIT as a simple-protocol Query message whose text is
// "commit".
type cutProxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32 // a cut mode; back to passThrough after one cut
	cuts   atomic.Int32
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.wg.Go(p.serve)
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *cutProxy) addr() *net.TCPAddr { return p.ln.Addr().(*net.TCPAddr) }

func (p *cutProxy) serve() {
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
		var swallow atomic.Bool // set once COMMIT went through in dropCommitOK
		conns.Go(func() {
			defer server.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := client.Read(buf)
				if n > 0 {
					chunk := buf[:n]
					if bytes.Contains(chunk, []byte("commit\x00")) {
						switch p.mode.Load() {
						case dropCommit:
							if p.mode.CompareAndSwap(dropCommit, passThrough) {
								p.cuts.Add(1)
								client.Close()
								return
							}
						case dropCommitOK:
							if p.mode.CompareAndSwap(dropCommitOK, passThrough) {
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

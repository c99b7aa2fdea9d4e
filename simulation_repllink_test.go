package retrybudget_test

import (
	"net"
	"sync"
	"testing"
)

// replLink is the replication link between a replica and its primary, a
// TCP relay the simulation can hold (what the primary sends stays in the
// relay: the replica lags and acknowledges nothing) and cut (what it held
// is lost, as when the primary dies before its stream went out).
type replLink struct {
	ln     net.Listener
	target string
	mu     sync.Mutex // guards all below
	cond   *sync.Cond // signalled when held changes or the link is cut
	held   bool
	conns  []net.Conn
	closed bool
}

// startReplLink relays connections to target until t ends.
func startReplLink(t *testing.T, target string) *replLink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &replLink{ln: ln, target: target}
	l.cond = sync.NewCond(&l.mu)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			if !l.add(c, d) {
				return
			}
			wg.Add(2)
			go func() { defer wg.Done(); l.pump(d, c, false) }() // replica to primary
			go func() { defer wg.Done(); l.pump(c, d, true) }()  // primary to replica
		}
	}()
	t.Cleanup(func() { l.cut(); ln.Close(); wg.Wait() })
	return l
}

func (l *replLink) add(c, d net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		c.Close()
		d.Close()
		return false
	}
	l.conns = append(l.conns, c, d)
	return true
}

// pump copies from src to dst; holdable data waits while the link is held.
func (l *replLink) pump(dst, src net.Conn, holdable bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && holdable {
			l.mu.Lock()
			for l.held && !l.closed {
				l.cond.Wait()
			}
			closed := l.closed
			l.mu.Unlock()
			if closed {
				return
			}
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// Addr is where the replica connects.
func (l *replLink) Addr() string { return l.ln.Addr().String() }

// hold stops the primary's stream reaching the replica.
func (l *replLink) hold() {
	l.mu.Lock()
	l.held = true
	l.mu.Unlock()
}

// release lets the held stream through.
func (l *replLink) release() {
	l.mu.Lock()
	l.held = false
	l.cond.Broadcast()
	l.mu.Unlock()
}

// cut closes the link for good, dropping what it held.
func (l *replLink) cut() {
	l.mu.Lock()
	l.closed = true
	conns := l.conns
	l.conns = nil
	l.cond.Broadcast()
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

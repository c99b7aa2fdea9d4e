package pgtest

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// CutMode says what an armed CutProxy does to the first COMMIT, or the
// first statement, it sees.
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
	// CutBeforeStatement closes both sides instead of forwarding the next
	// statement (an Execute or a simple Query message): it never runs.
	CutBeforeStatement
	// CutTornStatement forwards the first half of the next statement's
	// message, then closes both sides: the server reads a torn message
	// and runs nothing.
	CutTornStatement
	// CutAfterStatement forwards the next statement, then closes both
	// sides instead of forwarding its answer: the statement ran, and, on
	// its own outside a transaction, committed (the server answers an
	// implicit transaction's statement only after its commit).
	CutAfterStatement
	// CutTornBatch waits for a pipeline of two or more statements before
	// one Sync (pgx.Batch, pgledger's shared round trips), forwards its
	// first statement, and tears the second's Execute message, then
	// closes both sides: the pipeline's implicit transaction never
	// commits, and the client cannot know it.
	CutTornBatch
	// CutAfterBatch forwards a pipeline of two or more statements and its
	// Sync, then closes both sides instead of forwarding the answer: the
	// pipeline's implicit transaction committed at the Sync, and the
	// client cannot know it.
	CutAfterBatch
)

// CutProxy is a TCP proxy in front of PostgreSQL that breaks the first
// connection sending COMMIT, any statement, or a pipeline of statements,
// once armed, as its CutMode says, then passes everything through again. It reads the frontend
// protocol message by message: pgx sends a transaction's COMMIT as a
// simple-protocol Query message whose text is "commit", and a statement
// with arguments as Bind, Execute and Sync. Clients must connect in plain
// text (no TLS) for the proxy to see them.
type CutProxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32 // a CutMode; back to PassThrough after one cut
	cuts   atomic.Int32
	// latency delays each message that makes the server answer (Sync, a
	// simple Query, Flush): a round trip's one-way delay.
	latency atomic.Int64
	wg      sync.WaitGroup
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

// Arm makes the proxy cut the next COMMIT or statement as m says;
// PassThrough disarms it.
func (p *CutProxy) Arm(m CutMode) { p.mode.Store(int32(m)) }

// SetLatency delays, from now on, every message after which the server
// answers (a Sync, a simple Query, a Flush) by d, as a network between the
// client and the server would delay each round trip.
func (p *CutProxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

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
		var swallow atomic.Bool // set once the cut message went through in an After mode
		conns.Go(func() {
			defer server.Close()
			defer client.Close()
			p.forward(client, server, &swallow)
		})
		conns.Go(func() {
			defer client.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 && swallow.Load() {
					// The server answered the cut message: it ran. Lose
					// the answer.
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

// Frontend protocol facts (PostgreSQL protocol, "Message Formats"): the
// first message (and one after an SSL or GSS encryption request the server
// declined) has no type byte; every later one is a type byte and a
// big-endian int32 length that counts itself.
const (
	sslRequest    = 80877103
	gssEncRequest = 80877104
	maxMessage    = 1 << 30
)

// forward copies the client's messages to the server one by one, and
// applies the armed cut to the first message it matches. It returns when
// either side closes, or after a cut.
func (p *CutProxy) forward(client, server net.Conn, swallow *atomic.Bool) {
	startup := true
	var hdr [5]byte
	executes := 0 // Execute messages since the last Sync: a pipeline's statements
	for {
		var msg []byte
		if startup {
			if _, err := io.ReadFull(client, hdr[:4]); err != nil {
				return
			}
			n := binary.BigEndian.Uint32(hdr[:4])
			if n < 4 || n > maxMessage {
				return
			}
			msg = make([]byte, n)
			copy(msg, hdr[:4])
			if _, err := io.ReadFull(client, msg[4:]); err != nil {
				return
			}
			if len(msg) < 8 {
				startup = false
			} else if code := binary.BigEndian.Uint32(msg[4:8]); code != sslRequest && code != gssEncRequest {
				startup = false
			}
		} else {
			if _, err := io.ReadFull(client, hdr[:]); err != nil {
				return
			}
			n := binary.BigEndian.Uint32(hdr[1:])
			if n < 4 || n > maxMessage {
				return
			}
			msg = make([]byte, 1+n)
			copy(msg, hdr[:])
			if _, err := io.ReadFull(client, msg[5:]); err != nil {
				return
			}
			if msg[0] == 'E' {
				executes++
			}
			if d := time.Duration(p.latency.Load()); d > 0 && (msg[0] == 'S' || msg[0] == 'Q' || msg[0] == 'H') {
				time.Sleep(d) // the round trip's way to the server
			}
			act := p.cut(msg, executes)
			if msg[0] == 'S' {
				executes = 0
			}
			switch act {
			case cutDrop:
				return
			case cutTear:
				_, _ = server.Write(msg[:len(msg)/2])
				return
			case cutSwallow:
				swallow.Store(true)
			}
		}
		if _, err := server.Write(msg); err != nil {
			return
		}
	}
}

// cutAction is what forward does with one message.
type cutAction int

const (
	cutNone    cutAction = iota
	cutDrop              // close without forwarding it
	cutTear              // forward half of it, then close
	cutSwallow           // forward it, and lose the server's answer
)

// cut returns what to do with msg, a typed frontend message that comes
// after executes Execute messages since the last Sync (counting msg), and
// disarms the proxy when msg is the one it was armed for.
func (p *CutProxy) cut(msg []byte, executes int) cutAction {
	m := CutMode(p.mode.Load())
	if m == PassThrough {
		return cutNone
	}
	statement := msg[0] == 'E' || msg[0] == 'Q'
	commit := msg[0] == 'Q' && bytes.EqualFold(bytes.TrimRight(msg[5:], "\x00; "), []byte("commit"))
	var a cutAction
	switch {
	case m == CutBeforeCommit && commit, m == CutBeforeStatement && statement:
		a = cutDrop
	case m == CutTornStatement && statement:
		a = cutTear
	case m == CutAfterCommit && commit, m == CutAfterStatement && statement:
		a = cutSwallow
	case m == CutTornBatch && msg[0] == 'E' && executes == 2:
		a = cutTear
	case m == CutAfterBatch && msg[0] == 'S' && executes >= 2:
		a = cutSwallow
	default:
		return cutNone
	}
	if !p.mode.CompareAndSwap(int32(m), int32(PassThrough)) {
		return cutNone // another connection took the cut
	}
	if a != cutSwallow {
		p.cuts.Add(1)
	}
	return a
}

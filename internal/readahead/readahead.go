// Package readahead reads the start of a response body without taking it
// from the caller, bounded in bytes and in time: the DefaultClassifier's
// problem details, the ledger's stored body and the presets' error bodies
// all read through it.
package readahead

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// Read reads up to limit bytes of resp's body for a Classifier or an
// Observer that needs to look at it, and puts in its place a body that
// still gives the caller every byte, unread. A goroutine reads while
// Read waits at most wait, so a body that trickles or stalls does not
// hold the call; the goroutine ends when the body is read or closed.
// The caller is served the bytes read ahead as they arrive, so a stream
// (server-sent events, a long poll) reads as promptly as without Read.
//
// It reports the whole body and true when the body was complete within
// limit bytes and wait; otherwise nil and false (the caller still gets the
// body). A missing body is an empty one.
func Read(resp *http.Response, limit int64, wait time.Duration) ([]byte, bool) {
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil, true
	}
	pb := &peekedBody{orig: resp.Body, done: make(chan struct{}), more: make(chan struct{})}
	go pb.fill(limit+1, firstRead(resp.ContentLength, limit+1))
	resp.Body = pb
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-pb.done:
	case <-timer.C:
		// Nobody wants the bytes any more: the read-ahead stops after
		// its current read, and the caller reads on from the body.
		pb.mu.Lock()
		pb.abandoned = true
		pb.mu.Unlock()
		return nil, false
	}
	if pb.err != nil || int64(len(pb.buf)) > limit {
		return nil, false
	}
	return pb.buf, true
}

// chunk is the most the read-ahead asks of the body at once.
const chunk = 32 << 10

// smallRead is the read-ahead's first read of a body of unknown length;
// each read that fills its buffer doubles the next, up to chunk.
const smallRead = 512

// firstRead returns the size of the read-ahead's first read of at most n
// bytes from a body of length contentLength (-1: unknown): one byte more
// than a known length, so the read that meets EOF needs no second buffer,
// and small otherwise; most bodies read ahead are a few hundred bytes, and
// a buffer of chunk for each would be most of a call's allocations.
func firstRead(contentLength, n int64) int64 {
	if contentLength >= 0 {
		return max(min(contentLength+1, n, chunk), 1)
	}
	return min(n, smallRead)
}

// peekedBody is a response body whose first bytes are read ahead by a
// goroutine. Read serves the bytes read ahead as they arrive, then, once
// the read-ahead has ended, its error or the rest of the body; so the
// original is read by one goroutine at a time. Close closes the original,
// which ends the read-ahead, and waits for it, so no goroutine outlives
// the body.
type peekedBody struct {
	orig io.ReadCloser
	done chan struct{} // closed when the read-ahead has ended

	mu sync.Mutex // guards buf, err, ended, abandoned and more
	// buf is what the read-ahead read; it is only ever appended to, so
	// the slice Read returns stays valid.
	buf []byte
	err error // the read-ahead's error; nil at EOF or at its limit
	// ended reports that buf and err are final.
	ended bool
	// abandoned tells the read-ahead to stop after its current read.
	abandoned bool
	// more is closed, and replaced, whenever buf grows or the read-ahead
	// ends.
	more chan struct{}

	off int // the caller's position in buf; only Read touches it
}

// fill reads up to n bytes ahead, the first read of size first and each
// later one up to twice the last that filled its buffer (at most chunk),
// publishing each as it arrives.
func (p *peekedBody) fill(n, first int64) {
	defer close(p.done)
	tmp := make([]byte, first)
	var total int64
	for {
		m, err := p.orig.Read(tmp[:min(int64(len(tmp)), n-total)])
		total += int64(m)
		eof := err == io.EOF
		if eof {
			err = nil
		}
		p.mu.Lock()
		p.buf = append(p.buf, tmp[:m]...)
		end := eof || err != nil || total >= n || p.abandoned
		if end {
			p.err, p.ended = err, true
		}
		close(p.more)
		p.more = make(chan struct{})
		p.mu.Unlock()
		if end {
			return
		}
		if m == len(tmp) && len(tmp) < chunk {
			tmp = make([]byte, min(2*int64(len(tmp)), chunk, n-total))
		}
	}
}

func (p *peekedBody) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		p.mu.Lock()
		if p.off < len(p.buf) {
			n := copy(b, p.buf[p.off:])
			p.off += n
			p.mu.Unlock()
			return n, nil
		}
		if p.ended {
			err := p.err
			p.mu.Unlock()
			if err != nil {
				// A read failure met while reading ahead reaches the
				// caller at the same point of the stream.
				return 0, err
			}
			return p.orig.Read(b)
		}
		more := p.more
		p.mu.Unlock()
		<-more
	}
}

func (p *peekedBody) Close() error {
	err := p.orig.Close()
	<-p.done
	return err
}

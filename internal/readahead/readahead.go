// Package readahead reads the start of a response body without taking it
// from the caller, bounded in bytes and in time: the DefaultClassifier's
// problem details, the ledger's stored body and the presets' error bodies
// all read through it.
package readahead

import (
	"bytes"
	"io"
	"net/http"
	"time"
)

// Read reads up to limit bytes of resp's body for a Classifier or an
// Observer that needs to look at it, and puts in its place a body that
// still gives the caller every byte, unread. A goroutine reads while
// Read waits at most wait, so a body that trickles or stalls does not
// hold the call; the goroutine ends when the body is read or closed.
//
// It reports the whole body and true when the body was complete within
// limit bytes and wait; otherwise nil and false (the caller still gets the
// body). A missing body is an empty one.
func Read(resp *http.Response, limit int64, wait time.Duration) ([]byte, bool) {
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil, true
	}
	pb := &peekedBody{orig: resp.Body, done: make(chan struct{})}
	go pb.fill(limit + 1)
	resp.Body = pb
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-pb.done:
	case <-timer.C:
		return nil, false
	}
	if pb.err != nil || int64(len(pb.buf)) > limit {
		return nil, false
	}
	return pb.buf, true
}

// peekedBody is a response body whose first bytes are read ahead by a
// goroutine. Read waits for the read-ahead, then serves its bytes and the
// rest; Close closes the original, which ends the read-ahead, and waits
// for it, so no goroutine outlives the body.
type peekedBody struct {
	orig io.ReadCloser
	done chan struct{} // closed when buf and err are final
	buf  []byte
	err  error
	r    io.Reader // set by the first Read, after done
}

func (p *peekedBody) fill(n int64) {
	defer close(p.done)
	p.buf, p.err = io.ReadAll(io.LimitReader(p.orig, n))
}

func (p *peekedBody) Read(b []byte) (int, error) {
	<-p.done
	if p.r == nil {
		p.r = io.MultiReader(bytes.NewReader(p.buf), errReader{p.err}, p.orig)
	}
	return p.r.Read(b)
}

func (p *peekedBody) Close() error {
	err := p.orig.Close()
	<-p.done
	return err
}

// errReader returns its error, if any, so that a read failure met while
// reading ahead reaches the caller at the same point of the stream; a nil
// error reads as an empty stream.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

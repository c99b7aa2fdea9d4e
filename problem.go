package retrybudget

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"time"
)

// maxProblemBytes bounds how much of a response body is read to find
// problem details; a larger body is left alone.
const maxProblemBytes = 64 << 10

// Problem is an RFC 9457 problem details object sent by a provider with
// Content-Type application/problem+json.
type Problem struct {
	// Type is a URI reference that identifies the problem type.
	Type string `json:"type,omitempty"`
	// Title is a short, human-readable summary of the problem type.
	Title string `json:"title,omitempty"`
	// Status is the HTTP status code the provider put in the body.
	Status int `json:"status,omitempty"`
	// Detail is a human-readable explanation of this occurrence.
	Detail string `json:"detail,omitempty"`
	// Instance is a URI reference that identifies this occurrence.
	Instance string `json:"instance,omitempty"`
}

// peekWait bounds how long the classifier waits for a problem details body
// that has not arrived with the headers. A body that trickles or stalls must
// not hold the call: bare net/http would return at the headers.
const peekWait = 100 * time.Millisecond

// peekProblem parses problem details from resp without consuming its body:
// a goroutine reads up to maxProblemBytes+1 while the caller waits at most
// peekWait, and the bytes read are put back in front of the rest, so the
// caller still gets the whole body unread. It returns nil when the response
// carries none, or when the body is late, too large or not valid JSON.
func peekProblem(resp *http.Response) *Problem {
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "application/problem+json" {
		return nil
	}
	pb := &peekedBody{orig: resp.Body, done: make(chan struct{})}
	go pb.fill(maxProblemBytes + 1)
	resp.Body = pb
	timer := time.NewTimer(peekWait)
	defer timer.Stop()
	select {
	case <-pb.done:
	case <-timer.C:
		return nil
	}
	if pb.err != nil || len(pb.buf) > maxProblemBytes {
		return nil
	}
	var p Problem
	if json.Unmarshal(pb.buf, &p) != nil {
		return nil
	}
	return &p
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

// prefixedBody replays bytes already read in front of the unread rest of a
// response body, and closes the original.
type prefixedBody struct {
	r io.Reader
	c io.Closer
}

func (b *prefixedBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *prefixedBody) Close() error               { return b.c.Close() }

// errReader returns its error, if any, so that a read failure met while
// peeking reaches the caller at the same point of the stream; a nil error
// reads as an empty stream.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

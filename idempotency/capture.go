package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// capture is the http.ResponseWriter a guarded handler writes to. It holds
// the response back, up to a limit, so that the outcome is stored before
// the client sees it: a client that has the response and sends the key
// again then always gets the replay, never a "pending" answer. A response
// that outgrows the limit, or that the handler flushes, is streamed to the
// client from then on; only a body that fit is stored, otherwise its hash.
//
// The handler writes headers to a map of its own, which starts as a copy
// of the underlying writer's (so it sees what outer middleware set). The
// headers as they stood at the final WriteHeader are what is sent and
// stored, as net/http sends them: later changes are dropped, except
// trailers. Headers outer middleware set and the handler left alone are
// not stored, so a replay does not carry the first request's request ID.
// capture is used by one handler goroutine, as http.ResponseWriter
// requires, and needs no lock.
type capture struct {
	w      http.ResponseWriter
	limit  int // bytes of body held and stored; -1 stores none
	status int // the final status; zero until written

	h       http.Header // the handler's headers
	initial http.Header // the underlying writer's headers at the start
	final   http.Header // h at the final WriteHeader; nil until then

	buf bytes.Buffer
	// over reports that the body outgrew limit: buf is dropped and sum
	// hashes the whole body instead.
	over bool
	sum  hash.Hash
	n    int64 // body bytes written by the handler
	// streaming reports that the status and headers went to the client:
	// every later write goes straight through.
	streaming bool
}

// newCapture returns a capture writing to w.
func newCapture(w http.ResponseWriter, limit int) *capture {
	return &capture{w: w, limit: limit, h: w.Header().Clone(), initial: w.Header().Clone()}
}

// Header implements http.ResponseWriter.
func (c *capture) Header() http.Header { return c.h }

// sendHeaders makes the underlying writer's headers h.
func (c *capture) sendHeaders(h http.Header) {
	dst := c.w.Header()
	clear(dst)
	for k, vs := range h {
		dst[k] = slices.Clone(vs)
	}
}

// WriteHeader implements http.ResponseWriter. Informational statuses (1xx
// but 101) go to the client at once, as net/http sends them (RFC 9110
// §15.2); the first other status is the final one, later calls are ignored
// as net/http ignores them.
func (c *capture) WriteHeader(code int) {
	if code < 100 || code > 999 {
		// The same panic net/http raises, so the handler's bug surfaces
		// the same way (and the action is failed by the middleware).
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if c.status != 0 {
		return
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		c.sendHeaders(c.h) // such as the Link fields of 103 Early Hints
		c.w.WriteHeader(code)
		return
	}
	c.status = code
	c.final = c.h.Clone()
}

// Write implements http.ResponseWriter.
func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(c.status) {
		return 0, http.ErrBodyNotAllowed
	}
	c.n += int64(len(p))
	if !c.over && len(p) > 0 && c.buf.Len()+len(p) > c.limit {
		c.over = true
		c.sum = sha256.New()
		c.sum.Write(c.buf.Bytes())
		if err := c.stream(); err != nil {
			return 0, err
		}
		c.buf = bytes.Buffer{}
	}
	if c.over {
		c.sum.Write(p)
	} else {
		c.buf.Write(p)
	}
	if !c.streaming {
		return len(p), nil
	}
	return c.w.Write(p)
}

// stream sends the status, headers and the body held so far, once.
func (c *capture) stream() error {
	if c.streaming {
		return nil
	}
	c.streaming = true
	c.sendHeaders(c.final)
	c.w.WriteHeader(c.status)
	if c.buf.Len() == 0 {
		return nil
	}
	_, err := c.w.Write(c.buf.Bytes())
	return err
}

// FlushError sends what the handler wrote so far and flushes it, for
// http.ResponseController: a handler that flushes wants the client to see
// the response now, so it stops being held back. The body is still stored
// for replay if it ends up within the limit.
func (c *capture) FlushError() error {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if err := c.stream(); err != nil {
		return err
	}
	return http.NewResponseController(c.w).Flush()
}

// Flush implements http.Flusher; see FlushError.
func (c *capture) Flush() { _ = c.FlushError() }

// SetReadDeadline passes through to the underlying writer, for
// http.ResponseController.
func (c *capture) SetReadDeadline(t time.Time) error {
	return http.NewResponseController(c.w).SetReadDeadline(t)
}

// SetWriteDeadline passes through to the underlying writer, for
// http.ResponseController.
func (c *capture) SetWriteDeadline(t time.Time) error {
	return http.NewResponseController(c.w).SetWriteDeadline(t)
}

// EnableFullDuplex passes through to the underlying writer, for
// http.ResponseController.
func (c *capture) EnableFullDuplex() error {
	return http.NewResponseController(c.w).EnableFullDuplex()
}

// outcome returns what the store keeps of the response. A handler that
// wrote nothing answered 200 with no body, as net/http would send.
func (c *capture) outcome() ledger.Outcome {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.final == nil {
		c.final = c.h.Clone()
	}
	o := ledger.Outcome{Status: c.status, Header: changed(c.final, c.initial)}
	if c.over {
		o.BodyOmitted, o.BodyHash, o.BodyLen = true, hex.EncodeToString(c.sum.Sum(nil)), c.n
		return o
	}
	o.Body = bytes.Clone(c.buf.Bytes())
	return o
}

// deliver sends whatever is still held back, then hands net/http the
// trailers the handler set (RFC 9110 §6.5): fields declared in Trailer, or
// named with http.TrailerPrefix.
func (c *capture) deliver() error {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	err := c.stream()
	dst := c.w.Header()
	declared := map[string]bool{}
	for _, v := range c.final.Values("Trailer") {
		for _, name := range strings.Split(v, ",") {
			declared[http.CanonicalHeaderKey(strings.TrimSpace(name))] = true
		}
	}
	for k, vs := range c.h {
		if declared[k] || strings.HasPrefix(k, http.TrailerPrefix) {
			dst[k] = slices.Clone(vs)
		}
	}
	return err
}

// changed returns the fields of h that the handler set or changed, as
// against the outer middleware's initial ones.
func changed(h, initial http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		if !slices.Equal(vs, initial[k]) {
			out[k] = slices.Clone(vs)
		}
	}
	return out
}

// bodyAllowed reports whether a response with status may carry a body
// (RFC 9110 §6.4.1: not 1xx, 204 or 304).
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

package retrybudget

import (
	"bytes"
	"io"
	"net/http"
)

// requestBody hands out the request body for each attempt of one call.
type requestBody struct {
	// getBody returns a fresh copy of the body; nil when the body cannot
	// be replayed (or there is none).
	getBody func() (io.ReadCloser, error)
	// first is the body of the first attempt.
	first io.ReadCloser
	// length is the body's length for every attempt; -1 when unknown.
	length int64
	// whole is the whole body once the Transport buffered it or content
	// read it, so that it is read at most once; nil before.
	whole *wholeBody
	// sent is set once the first body has been handed out.
	sent bool
}

// wholeBody is content's answer: the whole body, or why it cannot be had.
type wholeBody struct {
	buf []byte
	err error
}

// prepareBody makes req's body replayable when it can: by GetBody when the
// caller set one, else by buffering it when it is at most limit bytes. A
// larger body is handed out once, with the buffered prefix put back in front.
// On a read error the original body is closed and the error returned.
func prepareBody(req *http.Request, limit int64) (requestBody, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return requestBody{first: req.Body, length: req.ContentLength}, nil
	}
	if req.GetBody != nil {
		return requestBody{first: req.Body, getBody: req.GetBody, length: req.ContentLength}, nil
	}
	if limit < 0 {
		return requestBody{first: req.Body, length: req.ContentLength}, nil
	}
	buf, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
	if err != nil {
		req.Body.Close()
		return requestBody{}, err
	}
	if int64(len(buf)) > limit {
		rest := &prefixedBody{r: io.MultiReader(bytes.NewReader(buf), req.Body), c: req.Body}
		return requestBody{first: rest, length: req.ContentLength}, nil
	}
	req.Body.Close()
	get := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	first, _ := get()
	return requestBody{first: first, getBody: get, length: int64(len(buf)), whole: &wholeBody{buf: buf}}, nil
}

// content returns the whole body for fingerprinting, reading a fresh copy
// from GetBody when the Transport did not buffer it. It fails for a body
// that cannot be replayed, since reading it would consume it. The body is
// read once: the re-send fingerprint and the ledger's share the answer.
func (b *requestBody) content(limit int64) ([]byte, error) {
	if b.whole == nil {
		buf, err := b.readContent(limit)
		b.whole = &wholeBody{buf: buf, err: err}
	}
	return b.whole.buf, b.whole.err
}

// readContent reads the whole body for content.
func (b *requestBody) readContent(limit int64) ([]byte, error) {
	switch {
	case b.first == nil || b.first == http.NoBody:
		return nil, nil
	case b.getBody == nil:
		return nil, ErrBodyNotReplayable
	}
	if limit < 0 {
		// A negative MaxBodyBuffer keeps bodies from being buffered for
		// retries; the ledger still reads its fingerprint, up to the
		// default bound.
		limit = DefaultMaxBodyBuffer
	}
	rc, err := b.getBody()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err == nil && int64(len(buf)) > limit {
		err = ErrBodyNotReplayable
	}
	return buf, err
}

// replayable reports whether another attempt can get the body.
func (b *requestBody) replayable() bool {
	return !b.sent || b.getBody != nil || b.first == nil || b.first == http.NoBody
}

// next returns the body for the next attempt. It must only be called when
// replayable reports true.
func (b *requestBody) next() (io.ReadCloser, error) {
	if !b.sent {
		b.sent = true
		return b.first, nil
	}
	if b.getBody == nil {
		return b.first, nil // nil or http.NoBody
	}
	return b.getBody()
}

// close closes a body that was never handed to the base transport, which
// otherwise owns closing it.
func (b *requestBody) close() {
	if !b.sent && b.first != nil {
		b.first.Close()
	}
}

// prefixedBody replays bytes already read in front of the unread rest of a
// body, and closes the original.
type prefixedBody struct {
	r io.Reader
	c io.Closer
}

func (b *prefixedBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *prefixedBody) Close() error               { return b.c.Close() }

package retrybudget

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
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

// peekProblem parses problem details from resp without consuming its body:
// the bytes read are put back in front of the rest, so the caller still gets
// the whole body unread. It returns nil when the response carries none, or
// when the body is too large or not valid JSON.
func peekProblem(resp *http.Response) *Problem {
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "application/problem+json" {
		return nil
	}
	buf, err := io.ReadAll(io.LimitReader(resp.Body, maxProblemBytes+1))
	resp.Body = &prefixedBody{r: io.MultiReader(bytes.NewReader(buf), errReader{err}, resp.Body), c: resp.Body}
	if err != nil || len(buf) > maxProblemBytes {
		return nil
	}
	var p Problem
	if json.Unmarshal(buf, &p) != nil {
		return nil
	}
	return &p
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

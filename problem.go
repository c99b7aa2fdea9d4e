package retrybudget

import (
	"encoding/json"
	"mime"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/internal/readahead"
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

// peekProblem parses problem details from resp without consuming its body
// (see readahead.Read). It returns nil when the response carries none, or when
// the body is late, larger than maxProblemBytes or not valid JSON.
func peekProblem(resp *http.Response) *Problem {
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "application/problem+json" {
		return nil
	}
	buf, ok := readahead.Read(resp, maxProblemBytes, peekWait)
	if !ok {
		return nil
	}
	var p Problem
	if json.Unmarshal(buf, &p) != nil {
		return nil
	}
	return &p
}

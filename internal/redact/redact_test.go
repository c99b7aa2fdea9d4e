package redact

import (
	"fmt"
	"io"
	"net/url"
	"testing"
)

// The URL of a *url.Error keeps the query string, which may carry a token:
// ErrorText leaves it out, keeping the operation and the cause.
func TestErrorTextDropsTheURL(t *testing.T) {
	inner := &url.Error{Op: "Get", URL: "https://user:pw@api.example.com/x?token=secret", Err: io.ErrUnexpectedEOF}
	outer := &url.Error{Op: "Post", URL: "https://api.example.com/y?token=secret", Err: inner}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{outer, "Post: unexpected EOF"},
		{fmt.Errorf("wrapped: %w", inner), "Get: unexpected EOF"},
		{io.EOF, "EOF"},
	} {
		if got := ErrorText(tt.err); got != tt.want {
			t.Errorf("ErrorText(%v) = %q; want %q", tt.err, got, tt.want)
		}
	}
}

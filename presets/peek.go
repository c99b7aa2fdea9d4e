package presets

import (
	"encoding/json"
	"mime"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/internal/readahead"
)

// maxPeek bounds how much of an error body is read to find a provider's
// error code. Error bodies are small JSON documents; a longer body is put
// back untouched and its code left unread.
const maxPeek = 16 << 10

// peekWait bounds how long a classifier waits for an error body that has
// not arrived with the headers: a stalled body must not hold the call.
const peekWait = 100 * time.Millisecond

// peekJSON decodes the JSON body of resp into v without consuming it (see
// readahead.Read), so the caller still reads the whole body. It
// reports whether v was filled; a body that is not JSON, too large, late or
// unreadable leaves v alone.
func peekJSON(resp *http.Response, v any) bool {
	if resp.Body == nil || resp.Body == http.NoBody {
		return false
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return false
	}
	buf, ok := readahead.Read(resp, maxPeek, peekWait)
	return ok && json.Unmarshal(buf, v) == nil
}

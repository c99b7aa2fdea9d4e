package presets

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
)

// maxPeek bounds how much of an error body is read to find a provider's
// error code. Error bodies are small JSON documents; a longer body is put
// back untouched and its code left unread.
const maxPeek = 16 << 10

// peekJSON decodes the JSON body of resp into v without consuming it: the
// bytes read are put back in front of the unread rest, so the caller still
// reads the whole body, and closing the body closes the original. It
// reports whether v was filled; a body that is not JSON, too large or
// unreadable leaves v alone.
func peekJSON(resp *http.Response, v any) bool {
	if resp.Body == nil || resp.Body == http.NoBody {
		return false
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return false
	}
	buf, err := io.ReadAll(io.LimitReader(resp.Body, maxPeek+1))
	resp.Body = &replayBody{r: io.MultiReader(bytes.NewReader(buf), errReader{err}, resp.Body), c: resp.Body}
	if err != nil || len(buf) > maxPeek {
		return false
	}
	return json.Unmarshal(buf, v) == nil
}

// replayBody replays bytes already read in front of the unread rest of a
// response body, and closes the original.
type replayBody struct {
	r io.Reader
	c io.Closer
}

func (b *replayBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *replayBody) Close() error               { return b.c.Close() }

// errReader returns its error, so a read failure met while peeking reaches
// the caller at the same point of the stream; a nil error reads as an
// empty stream.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

package retrybudget

import "net/http"

// KeyEvent describes an idempotency key the Transport put in place of the
// key the caller or an SDK had set in the key header: an Action's key wins,
// so that a re-submitted action reaches the provider under the key of its
// first submission (stripe-go, for one, sets a fresh random key on every
// POST).
type KeyEvent struct {
	// Request is the caller's request.
	Request *http.Request
	// Route names the Route that matched the request; empty when none did.
	Route string
	// Header is the key header.
	Header string
	// Replaced is the key that was in the header.
	Replaced string
	// Key is the key sent instead: the Action's.
	Key string
}

// setKey puts the call's key in its own copy of the headers, unless OmitKey
// says the provider documents no key header and there is no key there to
// replace; then the Outcome names no key, since none was sent. It reports a
// replaced key to the Observer.
func (c *call) setKey(key, replaced string) {
	if c.t.cfg.OmitKey && replaced == "" {
		c.out.Key = ""
		return
	}
	if !c.headerCopied {
		c.header, c.headerCopied = c.header.Clone(), true
	}
	c.header.Set(c.t.cfg.KeyHeader, key)
	if obs := c.t.cfg.Observer.KeyReplaced; obs != nil && replaced != "" {
		obs(KeyEvent{Request: c.req, Route: c.t.route, Header: c.t.cfg.KeyHeader, Replaced: replaced, Key: key})
	}
}

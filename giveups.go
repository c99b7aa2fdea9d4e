package retrybudget

import (
	"cmp"
	"container/list"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The give-up memory answers an SDK's re-sends of a call the Transport gave
// up on (see resend.go). It is bounded twice: in all (maxGiveUps), and per
// scope (maxScopeGiveUps), a scope being the Action's tenant or, for a call
// without one, its destination, so that one caller's flood of failing calls
// churns its own share and never takes another's. Its bytes are bounded
// the same way (maxGiveUpBytes, maxScopeGiveUpBytes): a give-up that would
// pass either keeps its status and Outcome but neither headers nor body,
// and answers re-sends with an empty body (Outcome.BodyOmitted).
//
// A give-up that may have been applied and must not be repeated (the
// outcome is uncertain) is kept until it expires: its loss would let an
// SDK's re-send reach the provider a second time. When a scope, or the
// memory, holds nothing but such give-ups, a newcomer is refused rather
// than one of them evicted, and its Outcome says so (NotRemembered). Any
// other give-up may make room, oldest first.
//
// Since such give-ups cannot make room, other scopes could fill the memory
// with them and leave none for a victim's. So the last tenth of the memory
// (its headroom) is reserved for scopes that hold fewer than
// scopeReserve give-ups: a scope past its reserve is refused once the
// memory is full but for the headroom, while a scope within it is refused
// only when the whole memory is full. Refusing a victim then takes more
// than maxGiveUps/10/scopeReserve (250) other scopes, each with its
// reserve of uncertain give-ups, live at once.
//
// Ids are keyed hashes (see id) of a fixed size, so the memory keeps
// neither a caller's key nor a credential, and an id costs the same
// whatever the caller sent.
//
// Every operation is O(1) amortised: expired give-ups leave from the front
// of an insertion-ordered list, room is made from the front of another,
// and nothing walks the memory.

// maxGiveUps bounds the give-ups a Transport remembers; maxScopeGiveUps
// bounds those of one scope.
// maxGiveUpBytes and maxScopeGiveUpBytes bound, likewise, the bytes of
// response headers and bodies they keep. scopeReserve is the give-ups a
// scope may hold in the memory's headroom.
const (
	maxGiveUps          = 10_000
	maxScopeGiveUps     = 1_000
	maxGiveUpBytes      = 32 << 20
	maxScopeGiveUpBytes = 4 << 20
	scopeReserve        = 4
)

// giveUps remembers recent give-ups by the ids of their calls.
type giveUps struct {
	mu sync.Mutex // guards every field below but secret
	// limit and scopeLimit are the bounds in give-ups, byteLimit and
	// scopeByteLimit in bytes; zero means maxGiveUps, maxScopeGiveUps,
	// maxGiveUpBytes and maxScopeGiveUpBytes.
	limit, scopeLimit, byteLimit, scopeByteLimit int
	ids                                          map[string]*memo
	scopes                                       map[string]*giveUpScope
	// order holds every memo, oldest first; spare those that may be
	// evicted, oldest first.
	order, spare list.List
	// bytes counts the headers and bodies of every memo.
	bytes int

	// secret keys the ids (see id): random, made once, never shown.
	secretOnce sync.Once
	secret     [32]byte
}

// giveUpScope is the share of one tenant or destination.
type giveUpScope struct {
	// spare holds the scope's memos that may be evicted, kept those that
	// may not; each oldest first.
	spare, kept list.List
	// bytes counts the headers and bodies of the scope's memos.
	bytes int
}

// idDomain separates give-up ids from any other use of a hash.
const idDomain = "retrybudget/giveup/id/v1"

// id returns the give-up id of parts: an HMAC-SHA256 of them, each
// length-prefixed so that no two lists of parts share one, under a secret
// of the memory's own. An id holds no credential or key a caller sent, and
// nobody outside the process can test guesses against it.
func (g *giveUps) id(scope []string, parts ...string) string {
	g.secretOnce.Do(func() { _, _ = rand.Read(g.secret[:]) }) // crypto/rand.Read never fails
	m := hmac.New(sha256.New, g.secret[:])
	m.Write([]byte(idDomain))
	for _, ps := range [...][]string{scope, parts} {
		for _, p := range ps {
			m.Write(strconv.AppendInt([]byte{'\n'}, int64(len(p)), 10))
			m.Write([]byte{':'})
			m.Write([]byte(p))
		}
		m.Write([]byte{0})
	}
	return string(m.Sum(nil))
}

// len returns how many memos the scope holds.
func (s *giveUpScope) len() int { return s.spare.Len() + s.kept.Len() }

// memo is one remembered give-up, under all the ids of its call.
type memo struct {
	g     *giveUp
	ids   []string
	scope string
	// bytes counts g's header and body.
	bytes int
	// inOrder is the memo's element in giveUps.order, inSpare in
	// giveUps.spare (nil for a kept memo), inScope in its scope's spare or
	// kept list.
	inOrder, inSpare, inScope *list.Element
}

// giveUp is what a re-send is answered with.
type giveUp struct {
	out   Outcome
	cause error
	// status, header and body are the response given up on; status is 0
	// when the give-up returned an error.
	status int
	header http.Header
	body   []byte
	until  time.Time
	// kept reports an uncertain outcome: a give-up that may have been
	// applied and must not be repeated, never evicted while it lives.
	kept bool
}

// get returns the live give-up of any of ids.
func (g *giveUps) get(ids []string, now time.Time) *giveUp {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		m := g.ids[id]
		if m == nil {
			continue
		}
		if now.Before(m.g.until) {
			return m.g
		}
		g.drop(m)
	}
	return nil
}

// put remembers e under ids in scope, and reports whether it did: false
// when the scope or the memory is full of give-ups that must be kept (see
// the headroom above). A give-up under an id already remembered in the same
// scope replaces the earlier one; an id another scope remembers stays
// that scope's. e's header and body are dropped when they would pass the
// scope's or the memory's bytes.
func (g *giveUps) put(ids []string, scope string, e *giveUp, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ids == nil {
		g.ids, g.scopes = map[string]*memo{}, map[string]*giveUpScope{}
	}
	g.expire(now)
	own := make([]string, 0, len(ids))
	for _, id := range ids {
		m := g.ids[id]
		if m != nil && m.scope != scope {
			continue
		}
		if m != nil {
			g.drop(m)
		}
		own = append(own, id)
	}
	if len(own) == 0 {
		return false
	}
	ids = own
	if s := g.scopes[scope]; s != nil && s.len() >= cmp.Or(g.scopeLimit, maxScopeGiveUps) && !g.makeRoom(&s.spare, &s.kept, now) {
		return false
	}
	// Looked up only now: making room may have emptied, and so dropped,
	// the scope.
	s := g.scopes[scope]
	limit := cmp.Or(g.limit, maxGiveUps)
	if s != nil && s.len() >= scopeReserve {
		limit -= limit / 10 // the headroom is for scopes within their reserve
	}
	if g.order.Len() >= limit && !g.makeRoom(&g.spare, nil, now) {
		return false
	}
	s = g.scopes[scope]
	if s == nil {
		s = &giveUpScope{}
		g.scopes[scope] = s
	}
	n := len(e.body)
	for k, vs := range e.header {
		n += headerBytes(k, vs)
	}
	if s.bytes+n > cmp.Or(g.scopeByteLimit, maxScopeGiveUpBytes) || g.bytes+n > cmp.Or(g.byteLimit, maxGiveUpBytes) {
		e.header, e.body, n = http.Header{}, nil, 0
		e.out.BodyOmitted = true
	}
	s.bytes += n
	g.bytes += n
	m := &memo{g: e, ids: ids, scope: scope, bytes: n}
	m.inOrder = g.order.PushBack(m)
	if e.kept {
		m.inScope = s.kept.PushBack(m)
	} else {
		m.inSpare = g.spare.PushBack(m)
		m.inScope = s.spare.PushBack(m)
	}
	for _, id := range ids {
		g.ids[id] = m
	}
	return true
}

// expire drops the expired memos at the front of order. A memo expires
// at most resendWindow after it was put, so the front is the oldest; one
// that expires early, at the RetryAt of its give-up, waits behind live ones
// for its turn, or for get or makeRoom to find it. Each memo leaves once,
// so expiry costs O(1) per put, amortised. expire requires that g.mu is
// held.
func (g *giveUps) expire(now time.Time) {
	for el := g.order.Front(); el != nil; el = g.order.Front() {
		m := el.Value.(*memo)
		if now.Before(m.g.until) {
			return
		}
		g.drop(m)
	}
}

// makeRoom drops the oldest memo of spare, or else the oldest of kept
// (nil for none) if it has expired, and reports whether it dropped one.
// makeRoom requires that g.mu is held.
func (g *giveUps) makeRoom(spare, kept *list.List, now time.Time) bool {
	if el := spare.Front(); el != nil {
		g.drop(el.Value.(*memo))
		return true
	}
	if kept == nil {
		return false
	}
	if el := kept.Front(); el != nil && !now.Before(el.Value.(*memo).g.until) {
		g.drop(el.Value.(*memo))
		return true
	}
	return false
}

// drop forgets m under all its ids. drop requires that g.mu is held.
func (g *giveUps) drop(m *memo) {
	for _, id := range m.ids {
		if g.ids[id] == m {
			delete(g.ids, id)
		}
	}
	g.order.Remove(m.inOrder)
	s := g.scopes[m.scope]
	s.bytes -= m.bytes
	g.bytes -= m.bytes
	if m.inSpare != nil {
		g.spare.Remove(m.inSpare)
		s.spare.Remove(m.inScope)
	} else {
		s.kept.Remove(m.inScope)
	}
	// An empty scope is forgotten, so that scopes are bounded by memos.
	if s.len() == 0 {
		delete(g.scopes, m.scope)
	}
}

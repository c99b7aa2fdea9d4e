package retrybudget

import (
	"cmp"
	"container/list"
	"net/http"
	"sync"
	"time"
)

// The give-up memory answers an SDK's re-sends of a call the Transport gave
// up on (see resend.go). It is bounded twice: in all (maxGiveUps), and per
// scope (maxScopeGiveUps), a scope being the Action's tenant or, for a call
// without one, its destination, so that one caller's flood of failing calls
// churns its own share and never takes another's.
//
// A give-up that may have been applied and must not be repeated (the
// outcome is uncertain) is kept until it expires: its loss would let an
// SDK's re-send reach the provider a second time. When a scope, or the
// memory, holds nothing but such give-ups, a newcomer is refused rather
// than one of them evicted, and its Outcome says so (NotRemembered). Any
// other give-up may make room, oldest first.
//
// Every operation is O(1) amortised: expired give-ups leave from the front
// of an insertion-ordered list, room is made from the front of another,
// and nothing walks the memory.

// maxGiveUps bounds the give-ups a Transport remembers; maxScopeGiveUps
// bounds those of one scope.
const (
	maxGiveUps      = 10_000
	maxScopeGiveUps = 1_000
)

// giveUps remembers recent give-ups by the ids of their calls.
type giveUps struct {
	mu sync.Mutex // guards every field below
	// limit and scopeLimit are the bounds; zero means maxGiveUps and
	// maxScopeGiveUps.
	limit, scopeLimit int
	ids               map[string]*memo
	scopes            map[string]*giveUpScope
	// order holds every memo, oldest first; spare those that may be
	// evicted, oldest first.
	order, spare list.List
}

// giveUpScope is the share of one tenant or destination.
type giveUpScope struct {
	// spare holds the scope's memos that may be evicted, kept those that
	// may not; each oldest first.
	spare, kept list.List
}

// len returns how many memos the scope holds.
func (s *giveUpScope) len() int { return s.spare.Len() + s.kept.Len() }

// memo is one remembered give-up, under all the ids of its call.
type memo struct {
	g     *giveUp
	ids   []string
	scope string
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
// when the scope or the memory is full of give-ups that must be kept. A
// give-up under an id already remembered replaces the earlier one.
func (g *giveUps) put(ids []string, scope string, e *giveUp, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ids == nil {
		g.ids, g.scopes = map[string]*memo{}, map[string]*giveUpScope{}
	}
	g.expire(now)
	for _, id := range ids {
		if m := g.ids[id]; m != nil {
			g.drop(m)
		}
	}
	if s := g.scopes[scope]; s != nil && s.len() >= cmp.Or(g.scopeLimit, maxScopeGiveUps) && !g.makeRoom(&s.spare, &s.kept, now) {
		return false
	}
	if g.order.Len() >= cmp.Or(g.limit, maxGiveUps) && !g.makeRoom(&g.spare, nil, now) {
		return false
	}
	// Looked up only now: making room may have emptied, and so dropped,
	// the scope.
	s := g.scopes[scope]
	if s == nil {
		s = &giveUpScope{}
		g.scopes[scope] = s
	}
	m := &memo{g: e, ids: ids, scope: scope}
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

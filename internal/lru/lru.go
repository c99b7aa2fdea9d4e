// Package lru is a map bounded by a hard cap, evicting the least recently
// used entry, with an amortised sweep of expired entries: per-destination
// state (the adaptive throttle's, the limiter's local pauses, the local
// budget's) keyed by something a caller may control, such as the URL host
// of a webhook, stays bounded in memory, and no call scans all of it.
//
// A Map is not safe for concurrent use; its owner guards it.
package lru

import (
	"container/list"
	"time"
)

// sweepPerPut is how many of the least recently used entries each Put
// examines for expiry: two, as Redis's active expiry samples a few keys
// per operation, so that entries nobody touches again still go.
const sweepPerPut = 2

// Map is a bounded map from K to V. Its zero value is not usable; New
// returns one.
type Map[K comparable, V any] struct {
	max     int
	expired func(v V, now time.Time) bool
	m       map[K]*list.Element
	order   list.List // front: most recently used
	visited uint64
}

type entry[K comparable, V any] struct {
	k K
	v V
}

// New returns an empty Map holding at most limit entries (at least 1).
// expired, when not nil, tells the amortised sweep which entries may go
// at now.
func New[K comparable, V any](limit int, expired func(v V, now time.Time) bool) *Map[K, V] {
	return &Map[K, V]{max: max(limit, 1), expired: expired, m: make(map[K]*list.Element)}
}

// Get returns k's value and marks it used.
func (c *Map[K, V]) Get(k K) (V, bool) {
	el, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry[K, V]).v, true
}

// Put sets k's value at now and marks it used, evicting the least recently used
// entry when the map would pass its cap. It first examines up to two of
// the least recently used entries and drops those expired, so Put costs
// O(1) however many entries the map holds.
func (c *Map[K, V]) Put(k K, v V, now time.Time) {
	c.sweep(sweepPerPut, now)
	if el, ok := c.m[k]; ok {
		el.Value.(*entry[K, V]).v = v
		c.order.MoveToFront(el)
		return
	}
	c.m[k] = c.order.PushFront(&entry[K, V]{k: k, v: v})
	if len(c.m) > c.max {
		c.Delete(c.order.Back().Value.(*entry[K, V]).k)
	}
}

// Delete removes k.
func (c *Map[K, V]) Delete(k K) {
	if el, ok := c.m[k]; ok {
		c.order.Remove(el)
		delete(c.m, k)
	}
}

// Len returns the number of entries.
func (c *Map[K, V]) Len() int { return len(c.m) }

// Visited returns how many entries the sweeps have examined in all, so a
// test can bound the work per call by counting rather than timing.
func (c *Map[K, V]) Visited() uint64 { return c.visited }

// Range calls fn for each entry, most recently used first, until fn
// returns false. It does not mark entries used.
func (c *Map[K, V]) Range(fn func(K, V) bool) {
	for el := c.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry[K, V])
		if !fn(e.k, e.v) {
			return
		}
	}
}

// sweep examines up to n of the least recently used entries and drops the
// expired ones at now.
func (c *Map[K, V]) sweep(n int, now time.Time) {
	if c.expired == nil {
		return
	}
	el := c.order.Back()
	for i := 0; i < n && el != nil; i++ {
		prev := el.Prev()
		c.visited++
		if e := el.Value.(*entry[K, V]); c.expired(e.v, now) {
			c.order.Remove(el)
			delete(c.m, e.k)
		}
		el = prev
	}
}

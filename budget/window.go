package budget

import "time"

// windowSlots is the number of slots a window is divided into, by Local,
// Throttle and budget.lua alike: counts expire one slot at a time, so a
// window is exact to a tenth of its length.
const windowSlots = 10

// window is a sliding window of two counters, a and b, kept in slots. Its
// zero value is an empty window. It is not safe for concurrent use.
type window struct {
	a, b [windowSlots]int64
	// slot is the index of the slot that holds epoch.
	slot int
	// epoch is the current slot's number since the Unix epoch.
	epoch int64
}

// advance moves the window of length span to now, clearing expired slots.
func (w *window) advance(span time.Duration, now time.Time) {
	width := max(int64(span/windowSlots), 1)
	e := now.UnixNano() / width
	steps := e - w.epoch
	if steps <= 0 {
		return // the same slot, or a clock that went back: count here
	}
	for range min(steps, windowSlots) {
		w.slot = (w.slot + 1) % windowSlots
		w.a[w.slot], w.b[w.slot] = 0, 0
	}
	w.epoch = e
}

// sums returns the totals of a and b over the window.
func (w *window) sums() (a, b int64) {
	for i := range windowSlots {
		a += w.a[i]
		b += w.b[i]
	}
	return a, b
}

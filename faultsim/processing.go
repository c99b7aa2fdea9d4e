package faultsim

import (
	"fmt"
	"net/http"
	"time"
)

// processing is how long the provider takes to process a replyLate
// request: it applies it then, whether or not its client is still there
// (a client cut off by its deadline or a SIGKILL leaves a request the
// provider still runs).
func (w *World) processing() time.Duration { return w.Lease / 2 }

// settleTime is every Transport's Config.SettleTime: at least the
// provider's processing time, as its godoc asks, counted from the last
// sending mark or attempt (which come before the request arrives).
func (w *World) settleTime() time.Duration { return 2 * w.processing() }

// late serves a replyLate arrival n of the call ci: the request is in
// flight for the provider's processing time, then applied, and answered
// 201 if its client still waits. A process that dies meanwhile (a fault
// after send) leaves the request to be applied after it is gone.
func (p *simProvider) late(req *http.Request, ci *callInfo, n int, key string) (*http.Response, error) {
	ctx := req.Context()
	r := p.r
	p.mu.Lock()
	p.inflight[ci.action]++ // the caller's deferred decrement is for the arrival; this one for the processing
	p.mu.Unlock()
	done := make(chan bool, 1)
	r.Go(func() {
		time.Sleep(r.w.processing())
		p.mu.Lock()
		applied := !p.honours || key == "" || !p.keys[key]
		if applied {
			p.effects[ci.action]++
			p.byCall[ci.id]++
			if p.honours && key != "" {
				p.keys[key] = true
			}
		}
		p.inflight[ci.action]--
		p.mu.Unlock()
		r.Logf("provider: action %d arrival %d: late, applied %v", ci.action, n, applied)
		done <- applied
	})
	r.Logf("provider: action %d arrival %d: processing", ci.action, n)
	if r.hook(ctx, atSend, true) {
		return nil, errDead
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-done:
	}
	return answer(req, http.StatusCreated, nil, fmt.Sprintf(`{"order":%d}`, ci.action)), nil
}

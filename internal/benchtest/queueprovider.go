package benchtest

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// QueueProvider is a provider that can fall into a metastable overload: a
// fixed number of workers take requests from a FIFO queue, each for
// service(now) read when its work starts, and it answers 503 at once when
// the queue is full. The work of a client that left is still done, as at
// a server that does not see the connection close until it writes the
// answer. It is an http.RoundTripper, for testing/synctest's virtual time.
type QueueProvider struct {
	q        chan chan struct{}
	service  func(now time.Time) time.Duration
	stop     chan struct{}
	workers  sync.WaitGroup
	arrivals atomic.Int64
}

// NewQueueProvider starts workers workers behind a queue of depth places,
// each request taking service(now). Close stops them.
func NewQueueProvider(workers, depth int, service func(now time.Time) time.Duration) *QueueProvider {
	p := &QueueProvider{q: make(chan chan struct{}, depth), service: service, stop: make(chan struct{})}
	for range workers {
		p.workers.Go(func() {
			for {
				select {
				case <-p.stop:
					return
				case done := <-p.q:
					time.Sleep(p.service(time.Now()))
					close(done)
				}
			}
		})
	}
	return p
}

// Close stops the workers, leaving the rest of the queue undone.
func (p *QueueProvider) Close() {
	close(p.stop)
	p.workers.Wait()
}

// Arrivals returns how many requests reached the provider, the ones it
// refused with 503 included.
func (p *QueueProvider) Arrivals() int64 { return p.arrivals.Load() }

// RoundTrip queues req and answers 200 when its work is done, 503 at once
// when the queue is full, or the context's error when the client leaves
// first (its work stays queued).
func (p *QueueProvider) RoundTrip(req *http.Request) (*http.Response, error) {
	p.arrivals.Add(1)
	done := make(chan struct{})
	status := http.StatusOK
	select {
	case p.q <- done:
		select {
		case <-done:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	default:
		status = http.StatusServiceUnavailable
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1,
		ProtoMinor: 1, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), ContentLength: 2, Request: req}, nil
}

package redisstore

import (
	"context"
	"time"
)

// RoundTrip runs fn with a context bounded by timeout and returns its
// result. With detached (a client that does not honour context deadlines,
// see HonoursContext) fn runs in a goroutine and RoundTrip returns when the
// deadline passes even if fn has not: the client ignores the deadline once
// a command is on the wire, so a stalled server would otherwise hold the
// caller for the client's ReadTimeout. That goroutine ends when the client
// gives up, and its result is dropped.
func RoundTrip[T any](ctx context.Context, timeout time.Duration, detached bool, fn func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !detached {
		return fn(ctx)
	}
	return Detach(ctx, fn)
}

// Detach runs fn in a goroutine and returns its result, or ctx's error as
// soon as ctx ends, for a client that does not honour context deadlines
// (see HonoursContext). The goroutine ends when the client gives up on
// its commands; its late result is dropped. A ctx that can never end runs
// fn in place.
func Detach[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	if ctx.Done() == nil {
		return fn(ctx)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case res := <-done:
		return res.v, res.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// CallerDone returns the error of the caller's own end: ctx.Err(), or
// context.DeadlineExceeded once ctx's deadline has passed. A client that
// honours context deadlines sets them on the socket, whose timeout can
// fire a moment before ctx's own timer ends it; a round trip that failed
// then is the caller's giving up, which says nothing about Redis.
func CallerDone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

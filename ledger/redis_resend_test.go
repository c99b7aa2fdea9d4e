package ledger

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// TestRedisResentWriteAnswersAsItsFirstRun: go-redis sends a command again
// when its connection breaks before the reply (MaxRetries, 3 by default),
// so a fenced write the server ran once may run a second time. That second
// run must answer as the first did and write nothing more: a Complete,
// Fail or Settle whose own write landed is not "another owner's", and one
// AddAttempt records one send.
func TestRedisResentWriteAnswersAsItsFirstRun(t *testing.T) {
	client, cut := cuttingClient(t)
	s := mustRedis(t, client, RedisConfig{Prefix: redistest.Prefix(t), MaxBatch: 1})
	for _, sc := range []*redis.Script{s.complete, s.fail, s.settle, s.attempt} {
		if err := sc.Load(t.Context(), client).Err(); err != nil {
			t.Fatal(err)
		}
	}
	owned := func(t *testing.T) (Key, int64) {
		k := Key{Tenant: "t", Operation: "charge", Key: t.Name()}
		res, err := s.Reserve(t.Context(), ReserveRequest{Key: k, Fingerprint: fpA, Owner: "w1", MarksSending: true, Sending: true})
		if err != nil || !res.Send {
			t.Fatalf("Reserve: %s, %v", res.Verdict, err)
		}
		return k, res.Token
	}

	t.Run("Complete", func(t *testing.T) {
		k, tok := owned(t)
		cut.next(s.complete)
		err := s.Complete(t.Context(), k, tok, Outcome{Status: 201, Body: []byte(`{"id":"ch_1"}`), AttemptClass: "success"})
		rec := cut.check(t, s, k, err)
		if rec.State != StateCompleted || rec.Outcome == nil || rec.Outcome.Status != 201 || len(rec.Attempts) != 2 {
			t.Fatalf("record %s, outcome %+v, %d attempts; want completed with 201 and the grant and the send", rec.State, rec.Outcome, len(rec.Attempts))
		}
	})
	t.Run("Fail", func(t *testing.T) {
		k, tok := owned(t)
		cut.next(s.fail)
		err := s.Fail(t.Context(), k, tok, Failure{EffectPossible: false, Reason: "refused", AttemptClass: "not-sent"})
		rec := cut.check(t, s, k, err)
		if rec.State != StateFailed || rec.Reason != "refused" || len(rec.Attempts) != 2 {
			t.Fatalf("record %s (%q), %d attempts; want failed, refused, with the grant and the send", rec.State, rec.Reason, len(rec.Attempts))
		}
	})
	t.Run("Settle", func(t *testing.T) {
		k, tok := owned(t)
		cut.next(s.settle)
		err := s.Settle(t.Context(), k, tok, Resolution{State: StateCompleted, Outcome: Outcome{Status: 200},
			Settlement: &Settlement{By: "alice", Reason: "checked the provider's log"}})
		rec := cut.check(t, s, k, err)
		if rec.State != StateCompleted || rec.Settlement == nil || rec.Settlement.By != "alice" {
			t.Fatalf("record %s, settlement %+v; want completed, settled by alice", rec.State, rec.Settlement)
		}
	})
	t.Run("AddAttempt", func(t *testing.T) {
		k, tok := owned(t)
		cut.next(s.attempt)
		a, err := s.AddAttempt(t.Context(), k, tok, "server")
		rec := cut.check(t, s, k, err)
		if len(rec.Attempts) != 2 || a.N != 2 || !a.At.Equal(rec.Attempts[1].At) || a.Class != "server" {
			t.Fatalf("attempt %+v, history %+v; want the one send, N 2, as recorded", a, rec.Attempts)
		}
	})
}

// cuttingClient returns a client of the test's Redis whose connection,
// when told with next, lets the next run of one script reach the server
// and then breaks before its reply, as a reset would: go-redis sends the
// command again on a new connection.
func cuttingClient(t *testing.T) (*redis.Client, *cutter) {
	base := redistest.Client(t)
	opt := *base.Options()
	c := &cutter{}
	dial := opt.Dialer
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &cutConn{Conn: conn, c: c}, nil
	}
	client := redis.NewClient(&opt)
	t.Cleanup(func() { client.Close() })
	return client, c
}

// cutter arms the cut of one script run, and counts the cuts made.
type cutter struct {
	armed atomic.Pointer[[]byte] // the script's SHA1, hex, until cut
	cuts  atomic.Int64
}

// next arms the cut of sc's next run.
func (c *cutter) next(sc *redis.Script) {
	h := []byte(sc.Hash())
	c.armed.Store(&h)
}

// check fails t unless the armed run was cut and err is nil, and returns
// the record of k.
func (c *cutter) check(t *testing.T, s *Redis, k Key, err error) Record {
	t.Helper()
	if c.armed.Load() != nil || c.cuts.Load() == 0 {
		t.Fatal("the script's run was never cut")
	}
	c.cuts.Store(0)
	if err != nil {
		t.Fatalf("the write ran, its reply was lost and the client sent it again: %v; want nil, as the first run answered", err)
	}
	rec, err := s.Get(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// cutConn is a connection whose armed write reaches the server and whose
// reply to it is read and dropped, the connection then closed.
type cutConn struct {
	net.Conn
	c   *cutter
	cut bool // the next read drops the reply and breaks the connection
}

func (cc *cutConn) Write(p []byte) (int, error) {
	if h := cc.c.armed.Load(); h != nil && bytes.Contains(p, *h) && cc.c.armed.CompareAndSwap(h, nil) {
		cc.cut = true
	}
	return cc.Conn.Write(p)
}

func (cc *cutConn) Read(p []byte) (int, error) {
	if !cc.cut {
		return cc.Conn.Read(p)
	}
	cc.cut = false
	_, err := cc.Conn.Read(make([]byte, 64<<10)) // the reply: the script ran
	cc.Conn.Close()
	cc.c.cuts.Add(1)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	return 0, io.EOF
}

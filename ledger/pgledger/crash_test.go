package pgledger_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// privateStore returns a private server and a function that opens a new
// pool and Store on it, in one schema that survives restarts.
func privateStore(t *testing.T) (*pgtest.Server, func() *pgledger.Store) {
	t.Helper()
	srv := pgtest.Start(t)
	schema := pgtest.Schema(t, srv.URL)
	open := func() *pgledger.Store {
		pool, err := pgxpool.New(context.Background(), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pgledger.New(pool, pgledger.Config{Schema: schema, Timeout: 2 * time.Second})
	}
	s := open()
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return srv, open
}

// TestReservationSurvivesKill9 pins "committed means durable": a
// reservation Reserve acknowledged is there after the database server is
// killed with SIGKILL (postmaster and every backend at once) and
// restarted, with its owner, token and lease, so a second worker is held
// and the first can still complete.
func TestReservationSurvivesKill9(t *testing.T) {
	srv, open := privateStore(t)
	s := open()
	res, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: "f", Owner: "w1", Lease: time.Hour})
	if err != nil || res.Verdict != ledger.VerdictCreated {
		t.Fatalf("Reserve: %s, %v", res.Verdict, err)
	}

	srv.Kill()
	if _, err := s.Get(t.Context(), keyA); err == nil {
		t.Fatal("Get succeeded with the server killed: the test is not talking to the server it killed")
	}
	srv.Restart()

	s = open()
	got, err := s.Get(t.Context(), keyA)
	if err != nil {
		t.Fatalf("Get after restart: %v", err)
	}
	if got.State != ledger.StateInProgress || got.Owner != "w1" || !got.LeaseUntil.Equal(res.Record.LeaseUntil) {
		t.Fatalf("after restart: %+v, reserved %+v", got, res.Record)
	}
	second, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: keyA, Fingerprint: "f", Owner: "w2", KeysHonoured: true})
	if err != nil || second.Verdict != ledger.VerdictPending {
		t.Fatalf("second worker after restart: %s, %v; want pending", second.Verdict, err)
	}
	if err := s.Complete(t.Context(), keyA, res.Token, ledger.Outcome{Status: 201, Body: []byte("done")}); err != nil {
		t.Fatalf("the first owner's Complete after restart: %v", err)
	}
}

// TestAcknowledgedReservationsSurviveKill9 kills the server while
// reservations stream in: every Reserve that returned a grant before the
// kill is found after the restart. (One in flight at the kill may or may
// not have committed; only acknowledged ones are promised.)
func TestAcknowledgedReservationsSurviveKill9(t *testing.T) {
	srv, open := privateStore(t)
	s := open()
	var acked []int
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			res, err := s.Reserve(context.Background(), ledger.ReserveRequest{Key: ledger.Key{Key: strconv.Itoa(i)}, Fingerprint: "f", Lease: time.Hour})
			if err != nil {
				return // the kill
			}
			if res.Verdict == ledger.VerdictCreated {
				acked = append(acked, i)
				n.Add(1)
			}
		}
	}()
	ledgertest.Poll(t, "50 reservations", func() bool { return n.Load() >= 50 })
	srv.Kill()
	<-done
	srv.Restart()

	s = open()
	for _, i := range acked {
		if _, err := s.Get(t.Context(), ledger.Key{Key: strconv.Itoa(i)}); err != nil {
			t.Fatalf("acknowledged reservation %d of %d lost: %v", i, len(acked), err)
		}
	}
	t.Logf("%d acknowledged reservations, all found after kill -9 and restart", len(acked))
}

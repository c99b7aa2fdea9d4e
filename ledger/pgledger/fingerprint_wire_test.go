package pgledger_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// bindRecorder is a pgledger.DB that keeps every bind parameter of every
// statement run through it: what a statement log
// (log_min_duration_statement, log_statement=all) would show.
type bindRecorder struct {
	pgledger.DB
	mu   sync.Mutex // guards args
	args []string
}

func (b *bindRecorder) keep(args []any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range args {
		b.args = append(b.args, fmt.Sprint(a))
	}
}

func (b *bindRecorder) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	b.keep(args)
	return b.DB.Exec(ctx, sql, args...)
}

func (b *bindRecorder) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	b.keep(args)
	return b.DB.Query(ctx, sql, args...)
}

func (b *bindRecorder) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	b.keep(args)
	return b.DB.QueryRow(ctx, sql, args...)
}

// holding counts the parameters that contain s.
func (b *bindRecorder) holding(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, a := range b.args {
		if strings.Contains(a, s) {
			n++
		}
	}
	return n
}

// TestBareFingerprintNeverBound pins that the request's bare fingerprint,
// a hash over a body that may hold card data, is never a bind parameter,
// as statement logs would keep it: only its sealed forms go to
// PostgreSQL, on every path of Reserve.
func TestBareFingerprintNeverBound(t *testing.T) {
	rec := &bindRecorder{DB: pgtest.Pool(t)}
	s := unmigrated(t, rec, pgledger.Config{})
	ctx := t.Context()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	fp := ledger.Fingerprint("POST", nil, nil, nil, []byte("number=4242424242424242&cvc=123"))
	k := ledger.Key{Tenant: "acme", Operation: "charge", Key: "order-1"}

	res, err := s.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: fp, MarksSending: true})
	if err != nil || res.Verdict != ledger.VerdictCreated {
		t.Fatalf("Reserve: %s, %v", res.Verdict, err)
	}
	if got, err := s.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: fp}); err != nil || got.Verdict != ledger.VerdictPending {
		t.Fatalf("second Reserve: %s, %v", got.Verdict, err)
	}
	if err := s.MarkSending(ctx, k, res.Token); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, k, res.Token, ledger.Outcome{Status: 201}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: fp}); err != nil || got.Verdict != ledger.VerdictReplayed {
		t.Fatalf("third Reserve: %s, %v", got.Verdict, err)
	}
	if n := rec.holding(fp); n > 0 {
		t.Fatalf("the bare fingerprint went to PostgreSQL in %d bind parameters", n)
	}
}

package pgledger_test

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// TestCutProxyCutsOneStatement pins what each statement cut of
// pgtest.CutProxy leaves in the database: an INSERT on its own (an
// implicit transaction, as every Store write is) never runs when cut
// before it is sent or torn in transit, and is committed when cut after
// it ran; the client gets an error every time, and the next statement on
// another connection passes through.
func TestCutProxyCutsOneStatement(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	direct := pgtest.PoolVia(t, url, schema, "")
	if _, err := direct.Exec(t.Context(), "CREATE TABLE rows (n int)"); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := pgtest.StartCutProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	for i, tc := range []struct {
		mode      pgtest.CutMode
		committed bool
	}{
		{pgtest.CutBeforeStatement, false},
		{pgtest.CutTornStatement, false},
		{pgtest.CutAfterStatement, true},
	} {
		conn := dial(t, url, schema, proxy)
		proxy.Arm(tc.mode)
		if _, err := conn.Exec(t.Context(), "INSERT INTO rows (n) VALUES ($1)", i); err == nil {
			t.Fatalf("mode %d: the INSERT succeeded through an armed proxy", tc.mode)
		}
		conn.Close(context.Background())
		var n int
		if err := direct.QueryRow(t.Context(), "SELECT count(*) FROM rows WHERE n = $1", i).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if got := n == 1; got != tc.committed {
			t.Errorf("mode %d: committed %v, want %v", tc.mode, got, tc.committed)
		}
		if proxy.Cuts() != i+1 {
			t.Errorf("mode %d: %d cuts, want %d", tc.mode, proxy.Cuts(), i+1)
		}
	}
	conn := dial(t, url, schema, proxy)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "INSERT INTO rows (n) VALUES (99)"); err != nil {
		t.Fatalf("a disarmed proxy cut a statement: %v", err)
	}
}

// dial connects to the database at url through proxy (see viaProxy).
func dial(t *testing.T, url, schema string, proxy *pgtest.CutProxy) *pgx.Conn {
	t.Helper()
	cfg, err := viaProxy(url, schema, proxy)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// viaProxy returns the configuration of a connection to schema in the
// database at url through proxy, in plain text so that the proxy reads the
// statements.
func viaProxy(url, schema string, proxy *pgtest.CutProxy) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = schema
	cfg.Host, cfg.Port = proxy.Addr().IP.String(), uint16(proxy.Addr().Port)
	cfg.TLSConfig, cfg.Fallbacks = nil, nil
	return cfg, nil
}

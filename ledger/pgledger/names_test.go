package pgledger_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// TestNameWithNewlineRunsNoSQL pins that a table or schema name cannot
// carry SQL into Migrate: a name holding a newline, which quoting keeps,
// is refused by New with ErrInvalidConfig, and the statement after the
// newline never runs.
func TestNameWithNewlineRunsNoSQL(t *testing.T) {
	pool := pgtest.Pool(t)
	const injection = "x\nCREATE TABLE IF NOT EXISTS injected (id int);\n--"
	for _, cfg := range []pgledger.Config{
		{Table: injection},
		{Schema: injection},
	} {
		cfg.FingerprintKeys = ledger.FingerprintKeys{[]byte("names-test-fingerprint-key")}
		s, err := pgledger.New(pool, cfg)
		if err == nil {
			_ = s.Migrate(t.Context()) // whatever it does, the injected table must not appear
		}
		var injected bool
		if err := pool.QueryRow(t.Context(), "SELECT to_regclass('injected') IS NOT NULL").Scan(&injected); err != nil {
			t.Fatal(err)
		}
		if injected {
			t.Fatalf("Config %+q: the injected CREATE TABLE ran", []string{cfg.Schema, cfg.Table})
		}
		if !errors.Is(err, ledger.ErrInvalidConfig) {
			t.Fatalf("New with a newline in a name: %v, want ErrInvalidConfig", err)
		}
	}
}

// TestNewAcceptsOnlyPlainNames pins the name rule: ASCII letters, digits
// and underscores, 1 to 63 bytes.
func TestNewAcceptsOnlyPlainNames(t *testing.T) {
	keys := ledger.FingerprintKeys{[]byte("names-test-fingerprint-key")}
	for _, tc := range []struct {
		table, schema string
		ok            bool
	}{
		{"retrybudget_ledger", "", true},
		{"Ledger_2", "tenant_42", true},
		{strings.Repeat("a", 63), "", true},
		{strings.Repeat("a", 64), "", false},
		{"ledger a", "", false},
		{"ledger-a", "", false},
		{`ledger"a`, "", false},
		{"ledger;DROP", "", false},
		{"lédger", "", false},
		{"ledger", "public.x", false},
	} {
		_, err := pgledger.New(nil, pgledger.Config{Table: tc.table, Schema: tc.schema, Config: ledger.Config{FingerprintKeys: keys}})
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ledger.ErrInvalidConfig)) {
			t.Errorf("New(Table %q, Schema %q) = %v; want ok %t", tc.table, tc.schema, err, tc.ok)
		}
	}
}

// TestSchemaHasNoPlaceholderInComments pins that no placeholder sits in a
// comment of the schema, where a replaced name could end the comment.
func TestSchemaHasNoPlaceholderInComments(t *testing.T) {
	b, err := os.ReadFile("schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if _, comment, ok := strings.Cut(line, "--"); ok && strings.Contains(comment, "{{") {
			t.Errorf("schema.sql:%d: a placeholder in a comment: %s", i+1, line)
		}
	}
}

package ledger

import (
	"errors"
	"strings"
	"testing"
)

func TestKeyID(t *testing.T) {
	a := Key{Tenant: "acme", Operation: "charge", Key: "sk_live_order-1"}
	if id := a.ID(); id != a.ID() || len(id) != 64 {
		t.Fatalf("ID %q is not a stable hex SHA-256", a.ID())
	}
	if strings.Contains(a.ID(), "acme") || strings.Contains(a.ID(), "order") {
		t.Fatal("ID leaks the raw identity")
	}
	// Length prefixes keep field boundaries: no shifting of bytes between
	// fields yields the same ID.
	pairs := [][2]Key{
		{{"a|b", "c", "d"}, {"a", "b|c", "d"}},
		{{"ab", "", "c"}, {"a", "b", "c"}},
		{{"", "ab", "c"}, {"a", "b", "c"}},
		{{"t", "op", "1:k"}, {"t", "op1", ":k"}},
	}
	for _, p := range pairs {
		if p[0].ID() == p[1].ID() {
			t.Errorf("%+v and %+v share an ID", p[0], p[1])
		}
	}
	if err := (Key{Tenant: "t", Operation: "op"}).validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty Key.Key: %v, want ErrInvalid", err)
	}
}

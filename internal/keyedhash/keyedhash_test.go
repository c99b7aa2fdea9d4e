package keyedhash

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestSumIsKeyedAndDomainSeparated(t *testing.T) {
	a, err := New([]byte("0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New([]byte("fedcba9876543210"))
	v := "Basic YWxpY2U6aHVudGVyMg=="
	plain := sha256.Sum256([]byte(v))
	if got := a.Sum("d", v, 0); got == b.Sum("d", v, 0) || strings.Contains(hex.EncodeToString(plain[:]), got[:16]) {
		t.Errorf("Sum does not depend on the key, or equals the unkeyed SHA-256")
	}
	if a.Sum("d1", v, 0) == a.Sum("d2", v, 0) {
		t.Error("two domains give the same name")
	}
	if len(a.Sum("d", v, 32)) != 32 {
		t.Error("Sum ignores n")
	}
}

func TestNewRefusesShortKey(t *testing.T) {
	if _, err := New([]byte("short")); !errors.Is(err, ErrShortKey) {
		t.Errorf("New(short) = %v, want ErrShortKey", err)
	}
}

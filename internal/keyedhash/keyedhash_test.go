package keyedhash

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
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

// TestSumIsHMACSHA256 checks Sum against crypto/hmac, over reuses of its
// pooled states from concurrent callers: each name is the HMAC of the
// domain, a zero byte and the value, whatever was hashed before.
func TestSumIsHMACSHA256(t *testing.T) {
	key := []byte("0123456789abcdef0123")
	h, _ := New(key)
	want := func(domain, value string) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(domain + "\x00" + value))
		return hex.EncodeToString(m.Sum(nil))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				d, v := "domain", strings.Repeat("v", (g*200+i)%150)
				if got := h.Sum(d, v, 0); got != want(d, v) {
					t.Errorf("Sum(%q, %d bytes) = %s, want %s", d, len(v), got, want(d, v))
					return
				}
				if got := h.Sum(d, v, 32); got != want(d, v)[:32] {
					t.Errorf("Sum(%q, %d bytes, 32) = %s, want %s", d, len(v), got, want(d, v)[:32])
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkSum: one owner's name, as the fair queue makes it on every
// decision, against a fresh crypto/hmac per name.
func BenchmarkSum(b *testing.B) {
	key := []byte("0123456789abcdef0123")
	h, _ := New(key)
	b.Run("Hasher", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.Sum("owner", "tenant-42", 32)
		}
	})
	b.Run("hmac.New", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m := hmac.New(sha256.New, key)
			m.Write([]byte("owner\x00tenant-42"))
			_ = hex.EncodeToString(m.Sum(nil))[:32]
		}
	})
}

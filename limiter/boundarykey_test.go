package limiter

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// TestNewRedisRefusesNoBoundaryKey: a Redis limiter, whose store the fleet
// shares, does not start without a BoundaryKey; a Local one needs none.
func TestNewRedisRefusesNoBoundaryKey(t *testing.T) {
	rdb := redistest.Client(t)
	for _, key := range [][]byte{nil, {}} {
		l, err := NewRedis(rdb, RedisConfig{BoundaryKey: key})
		if !errors.Is(err, ErrNoBoundaryKey) || !errors.Is(err, ErrInvalidConfig) || l != nil {
			t.Errorf("NewRedis(BoundaryKey %q) = %v, %v; want ErrNoBoundaryKey (an ErrInvalidConfig)", key, l, err)
		}
	}
	if _, err := NewLocal(LocalConfig{Limits: []Limit{PerSecond(1)}}); err != nil {
		t.Errorf("NewLocal without a key: %v", err)
	}
}

// TestBoundaryKeyKeysRedisNames: the Redis name of a credential boundary
// and of an owner is a keyed hash, different under another deployment's
// key; a short key is refused.
func TestBoundaryKeyKeysRedisNames(t *testing.T) {
	req, _ := http.NewRequest("POST", "https://api.example.com/", nil)
	req.Header.Set("Authorization", "Basic YWxpY2U6aHVudGVyMg==")
	b := ByCredential()(req)
	a, errA := newKeyspace("", []byte("deployment-a-boundary-key"))
	o, errO := newKeyspace("", []byte("deployment-b-boundary-key"))
	if errA != nil || errO != nil {
		t.Fatal(errA, errO)
	}
	if a.base(b) == o.base(b) || a.owner("tenant") == o.owner("tenant") {
		t.Errorf("names %q %q, owners %q %q: want a different name under each key", a.base(b), o.base(b), a.owner("tenant"), o.owner("tenant"))
	}
	if _, err := newKeyspace("", []byte("short")); !errors.Is(err, ErrInvalidConfig) || errors.Is(err, ErrNoBoundaryKey) {
		t.Errorf("short BoundaryKey: %v, want ErrInvalidConfig (not ErrNoBoundaryKey)", err)
	}
}

// TestUnkeyedCredentialHashNotInRedis pins that no guessable credential
// hash reaches Redis: keys named by an unkeyed SHA-256 of a ByCredential
// boundary let whoever can list Redis keys test guessed passwords offline.
// After decisions,
// a cooldown and a fair-queue turn for a boundary keyed by a Basic
// credential, no key name nor stored value holds the credential, the
// password, or any unkeyed SHA-256 of them, of the boundary or of the
// owner, whole or as a 16-digit prefix.
func TestUnkeyedCredentialHashNotInRedis(t *testing.T) {
	const cred = "Basic YWxpY2U6aHVudGVyMg==" // alice:hunter2
	const owner = "authz:alice"
	req, _ := http.NewRequest("POST", "https://api.example.com/v1/charges", nil)
	req.Header.Set("Authorization", cred)
	boundary := ByCredential()(req)
	_, credHash, _ := strings.Cut(boundary, "#")

	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	ctx := context.Background()
	for _, cfg := range []RedisConfig{
		{Limits: []Limit{PerSecond(100)}, OwnerShare: 0.5},
		{Limits: []Limit{PerSecond(100)}, Queue: &FairQueue{}},
	} {
		l := newTestRedis(t, rdb, prefix, cfg)
		if _, err := l.Allow(ctx, Request{Boundary: boundary, Owner: owner}); err != nil {
			t.Fatal(err)
		}
		if err := l.Cooldown(ctx, boundary, time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}

	unkeyed := []string{credHash}
	for _, s := range []string{cred, "YWxpY2U6aHVudGVyMg==", "alice:hunter2", "hunter2", boundary, owner,
		credentialDomain + "\x00Authorization\x00" + cred, keyDomain + "\x00" + boundary, keyDomain + "\x00" + owner} {
		sum := sha256.Sum256([]byte(s))
		unkeyed = append(unkeyed, hex.EncodeToString(sum[:]))
	}
	secrets := []string{cred, "YWxpY2U6aHVudGVyMg==", "alice:hunter2", "hunter2", "alice", owner}
	check := func(what, s string) {
		for _, sec := range secrets {
			if strings.Contains(s, sec) {
				t.Errorf("%s %q holds %q", what, s, sec)
			}
		}
		for _, h := range unkeyed {
			if strings.Contains(s, h[:16]) {
				t.Errorf("%s %q holds an unkeyed SHA-256 (prefix %s)", what, s, h[:16])
			}
		}
		if b, err := base64.StdEncoding.DecodeString(s); err == nil && strings.Contains(string(b), "hunter2") {
			t.Errorf("%s %q decodes to the password", what, s)
		}
	}
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 3 {
		t.Fatalf("keys %q: want the boundary's cooldown, rate and owner keys", keys)
	}
	for _, k := range keys {
		check("key", k)
		typ, err := rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		var vals []string
		switch typ {
		case "string":
			v, _ := rdb.Get(ctx, k).Result()
			vals = []string{v}
		case "zset":
			vals, _ = rdb.ZRange(ctx, k, 0, -1).Result()
		case "hash":
			m, _ := rdb.HGetAll(ctx, k).Result()
			for f, v := range m {
				vals = append(vals, f, v)
			}
		case "list":
			vals, _ = rdb.LRange(ctx, k, 0, -1).Result()
		case "set":
			vals, _ = rdb.SMembers(ctx, k).Result()
		}
		for _, v := range vals {
			check("value of "+k, v)
		}
	}
}

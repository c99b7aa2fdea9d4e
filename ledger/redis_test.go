package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// mustRedis is NewRedis with the tests' fingerprint key added to cfg,
// failing t on an error.
func mustRedis(t testing.TB, client redis.UniversalClient, cfg RedisConfig) *Redis {
	t.Helper()
	cfg.FingerprintKeys = append(cfg.FingerprintKeys, redistest.LedgerKey())
	s, err := NewRedis(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A nil client, or a nil pointer of a go-redis client type, is an error at
// construction rather than a panic at the first Reserve; so is a prefix
// with a brace, as in packages limiter and budget.
func TestNewRedisRefusesABadClientOrPrefix(t *testing.T) {
	for _, c := range []redis.UniversalClient{nil, (*redis.Client)(nil), (*redis.ClusterClient)(nil), (*redis.Ring)(nil)} {
		if s, err := NewRedis(c, RedisConfig{}); !errors.Is(err, ErrInvalidConfig) || s != nil {
			t.Errorf("NewRedis(%T(nil)) = %v, %v; want ErrInvalidConfig", c, s, err)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer c.Close()
	if _, err := NewRedis(c, RedisConfig{Prefix: "a{b}:"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewRedis with Prefix a{b}: = %v; want ErrInvalidConfig", err)
	}
}

// TestRedisKeyLayout pins the key name (hash tag over a hash, never the
// raw identity) and the expiry set from server time.
func TestRedisKeyLayout(t *testing.T) {
	client := redistest.Client(t)
	prefix := redistest.Prefix(t)
	s := mustRedis(t, client, RedisConfig{Prefix: prefix})
	k := Key{Tenant: "acme", Operation: "charge", Key: "sk_live_secret-ish"}
	if _, err := s.Reserve(t.Context(), ReserveRequest{Key: k, Fingerprint: fpA, Retention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	keys, err := client.Keys(t.Context(), globEscape(prefix)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != prefix+"{"+k.ID()+"}" {
		t.Fatalf("keys %q", keys)
	}
	if strings.Contains(keys[0], "acme") || strings.Contains(keys[0], "secret") {
		t.Fatalf("key name %q carries the raw identity", keys[0])
	}
	ttl, err := client.PTTL(t.Context(), keys[0]).Result()
	if err != nil || ttl <= 59*time.Minute+ExpiryGrace || ttl > time.Hour+ExpiryGrace {
		t.Fatalf("PTTL = %s, %v; want about the retention plus ExpiryGrace", ttl, err)
	}
	if mustRedis(t, client, RedisConfig{}).keyName(k) != DefaultPrefix+"{"+k.ID()+"}" {
		t.Fatal("zero Prefix does not mean DefaultPrefix")
	}
}

// TestRedisCorruptRecord pins that an unreadable record is an error, not a
// guess.
func TestRedisCorruptRecord(t *testing.T) {
	client := redistest.Client(t)
	s := mustRedis(t, client, RedisConfig{Prefix: redistest.Prefix(t)})
	for _, st := range []string{"bogus", "absent"} {
		k := Key{Key: st}
		if err := client.HSet(t.Context(), s.keyName(k), "st", st, "fp", fpA, "ca", "1", "ea", "1", "lu", "0", "na", "0").Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Del(t.Context(), s.keyName(k)) })
		if _, err := s.Get(t.Context(), k); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Get with st=%s: %v, want ErrCorrupt", st, err)
		}
	}
	if _, err := s.Reserve(t.Context(), ReserveRequest{Key: Key{Key: "bogus"}, Fingerprint: fpA}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Reserve over st=bogus: %v, want ErrCorrupt", err)
	}
	if _, err := s.Sweep(t.Context(), 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Sweep over corrupt records: %v, want ErrCorrupt", err)
	}
}

// TestRedisScriptCacheFlushed pins the EVALSHA fallback: a server that
// lost its script cache (restart, failover, SCRIPT FLUSH) still works.
func TestRedisScriptCacheFlushed(t *testing.T) {
	srv := redistest.Start(t) // private: SCRIPT FLUSH is server-wide
	client := srv.Client(t)
	s := mustRedis(t, client, RedisConfig{})
	res, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(t.Context(), keyA, res.Token, Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
}

func TestGlobEscape(t *testing.T) {
	if got := globEscape(`a*b?c[d]e\f{g}`); got != `a\*b\?c\[d\]e\\f{g}` {
		t.Fatalf("globEscape = %q", got)
	}
}

package retrybudget

import (
	"context"
	"net/http"
	"regexp"
	"sync"
	"testing"

	"github.com/google/uuid"
)

// canonicalUUID is the text form uuid.NewString makes: lower-case hex in
// groups of 8-4-4-4-12.
var canonicalUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestGeneratedKeysAreDistinctVersion4UUIDs(t *testing.T) {
	var sent []string
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		sent = append(sent, r.Header.Get(DefaultKeyHeader))
		return canned{}.RoundTrip(r)
	})
	tr := New(Config{Base: base})
	const calls = 5*keysPerBatch + 3 // several batches, the last one cut short
	seen := map[string]bool{}
	for range calls {
		resp, err := send(context.Background(), t, tr, "POST", "http://api.example/charges", "{}")
		if err != nil {
			t.Fatal(err)
		}
		o := finalOutcome(t, resp)
		key := sent[len(sent)-1]
		if o.Key != key {
			t.Fatalf("Outcome.Key %q; want the key sent, %q", o.Key, key)
		}
		u, err := uuid.Parse(key)
		if err != nil || !canonicalUUID.MatchString(key) || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("key %q: want a version 4 UUID in canonical form (parse error %v)", key, err)
		}
		if seen[key] {
			t.Fatalf("key %q generated twice", key)
		}
		seen[key] = true
	}
}

func TestEachTransportDrawsItsOwnKeys(t *testing.T) {
	var a, b keyMint
	seen := map[string]bool{}
	for range 2 * keysPerBatch {
		for _, k := range []string{a.key(), b.key()} {
			if seen[k] {
				t.Fatalf("key %q handed out twice", k)
			}
			seen[k] = true
		}
	}
}

// Calls that take keys at once, across the end of batches, each get a key
// of their own.
func TestConcurrentCallsGetDistinctKeys(t *testing.T) {
	var m keyMint
	const workers, each = 8, 5 * keysPerBatch
	keys := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				keys[w] = append(keys[w], m.key())
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, ks := range keys {
		for _, k := range ks {
			if seen[k] || !canonicalUUID.MatchString(k) {
				t.Fatalf("key %q handed out twice or malformed", k)
			}
			seen[k] = true
		}
	}
}

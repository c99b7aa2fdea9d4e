package retrybudget

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// Under OmitKey the provider documents no idempotency key: a key the caller
// or an SDK put in the header makes a POST repeatable only where
// KeysHonoured says the provider deduplicates by it.
func TestCallersKeyUnderOmitKeyRepeatsOnlyWhereKeysHonoured(t *testing.T) {
	for _, tt := range []struct {
		omit, honoured bool
		arrivals       int
	}{
		{omit: false, honoured: false, arrivals: 3}, // a caller's key is trusted
		{omit: true, honoured: false, arrivals: 1},  // the provider ignores keys
		{omit: true, honoured: true, arrivals: 3},   // ... except where it honours them
	} {
		t.Run(fmt.Sprintf("OmitKey %v KeysHonoured %v", tt.omit, tt.honoured), func(t *testing.T) {
			p := newProvider(t, status(500))
			tr, _ := newFakeTransport(Config{OmitKey: tt.omit, KeysHonoured: tt.honoured, MaxAttempts: 3})
			resp, err := post(context.Background(), t, tr, p.URL, http.Header{"Idempotency-Key": {"caller-1"}})
			if err != nil {
				t.Fatal(err)
			}
			o := finalOutcome(t, resp)
			if n := len(p.requests()); n != tt.arrivals {
				t.Fatalf("%d arrivals, want %d (outcome %+v)", n, tt.arrivals, o)
			}
		})
	}
}

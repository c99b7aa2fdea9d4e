package retrybudget_test

import (
	"testing"

	"github.com/retrybudget/retrybudget"
)

// TestIdempotencyKeyIsStable pins the key sent to providers for fixed
// actions. These values must never change: a provider matches a retry to
// its first attempt by this key, and the ledger replays a recorded action
// under it, so a change makes every retry of an action recorded before it
// stop matching its record and run again.
func TestIdempotencyKeyIsStable(t *testing.T) {
	for _, tc := range []struct {
		action retrybudget.Action
		want   string
	}{
		{retrybudget.Action{Tenant: "acme", Operation: "charge", Key: "order-1042"}, "f10a51b8-983a-56eb-8432-2d524e49b4f3"},
		{retrybudget.Action{Tenant: "globex", Operation: "charge", Key: "order-1042"}, "9a1122b6-ea28-563c-9c61-02da4daec555"},
		{retrybudget.Action{Tenant: "acme", Operation: "charge", Key: "order-1"}, "2ac337af-fe97-5a60-9cf9-3372fe69eae7"},
		{retrybudget.Action{Tenant: "acme:charge", Operation: "", Key: "order-1"}, "deda5cf5-ce7a-52f9-96a5-cb4e1ff85a32"},
		{retrybudget.Action{}, "98ad7393-2df3-5092-a67a-7dc2f5ab744e"},
		{retrybudget.Action{Tenant: "tenant-ü", Operation: "refund", Key: "订单-7"}, "8f0f7b79-9b75-5cf7-ae46-fececc2bfbbb"},
	} {
		if got := tc.action.IdempotencyKey(); got != tc.want {
			t.Errorf("%+v: IdempotencyKey %s; want %s (this value must never change)", tc.action, got, tc.want)
		}
	}
}

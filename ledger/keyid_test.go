package ledger

import "testing"

// TestKeyIDIsStable pins the record ID of fixed keys. These values must
// never change: a store finds an action's record by this ID, so a change
// makes every retry of an action recorded before it stop matching its
// record and run again.
func TestKeyIDIsStable(t *testing.T) {
	for _, tc := range []struct {
		key  Key
		want string
	}{
		{Key{Tenant: "acme", Operation: "charge", Key: "sk_live_order-1"}, "99202230265f1747d65131f294b23b8ab8694b70ce2d54165f45edf3b026f588"},
		{Key{Tenant: "acme", Operation: "charge", Key: "order-1042"}, "6c67333c944c60838a58da050807909d6970662c983fa988973b7ddef57d9a42"},
		{Key{Tenant: "globex", Operation: "charge", Key: "order-1042"}, "41bfef2096a221fda4ee23aef739705c69cff03a2cdad819d385c2c6d9a79d5f"},
		{Key{Tenant: "acme:charge", Operation: "", Key: "order-1"}, "10833245666269fc3b1041fbe1d9e1d8ea5031794300b4a0fde35217dc7da932"},
		{Key{}, "63cab8e921e413242a44bf4e8fdc999d3834c0883aed7afd6199c1ffa98c1948"},
		{Key{Tenant: "tenant-ü", Operation: "refund", Key: "订单-7"}, "507619c6db74f5311168acdae3aed857d114f8d8c478b7b48b64d12150064563"},
	} {
		if got := tc.key.ID(); got != tc.want {
			t.Errorf("%+v: ID %s; want %s (this value must never change)", tc.key, got, tc.want)
		}
	}
}

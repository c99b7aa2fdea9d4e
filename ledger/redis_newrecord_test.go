package ledger

import (
	"reflect"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// A new record's reservation is answered with the head of the script's
// reply alone and the record built from the request (newRecord): it must
// be the record reserve.lua stored, field for field, however the request
// is shaped and whatever an expired record left behind.
func TestRedisNewRecordAnswersAsStored(t *testing.T) {
	client := redistest.Client(t)
	s := mustRedis(t, client, RedisConfig{Prefix: redistest.Prefix(t)})
	expired := Key{Tenant: "acme", Operation: "charge", Key: "expired"}
	// A completed record past its retention, with a reason and an
	// operator's settlement: a new grant replaces all of it.
	if err := client.HSet(t.Context(), s.keyName(expired), "st", "completed", "fp", fpB, "tok", "7", "ca", "1", "ea", "2",
		"lu", "0", "na", "1", "a1", `{"at":"1","class":"created","owner":"old","token":"7"}`, "rs", "gone",
		"xb", "ops", "xr", "checked", "xa", "1", "xp", "1", "xf", "ref", "os", "200", "oh", "{}", "obh", "h", "obl", "0", "oo", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]ReserveRequest{
		"plain":   {Key: Key{Key: "plain"}, Fingerprint: fpA},
		"sending": {Key: Key{Tenant: "acme", Operation: "charge", Key: "sending"}, Fingerprint: fpA, Owner: "worker-1", Instance: "run-2", Sending: true, MarksSending: true, Settle: 3 * time.Second},
		"lease and retention": {Key: Key{Key: "durations"}, Fingerprint: fpA, Owner: "w", Lease: 90 * time.Second, Retention: time.Minute,
			KeysHonoured: true},
		"over an expired record": {Key: expired, Fingerprint: fpA, Owner: "new", Sending: true},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := s.Reserve(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != VerdictCreated {
				t.Fatalf("verdict %s, want created", res.Verdict)
			}
			stored, err := s.Get(t.Context(), req.Key)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Record, stored) {
				t.Errorf("Reserve answered\n%+v\nthe store holds\n%+v", res.Record, stored)
			}
		})
	}
}

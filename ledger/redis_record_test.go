package ledger

import (
	"errors"
	"testing"
)

// FuzzDecodeRecord feeds decodeRecord hash fields as a damaged or foreign
// key might hold them: it must return a record or ErrCorrupt, never panic.
func FuzzDecodeRecord(f *testing.F) {
	f.Add("completed", "1700000000000", "1700000000000", "0", "1", `{"at":"1700000000000","class":"created","owner":"w","token":"7"}`, "200", `{"Content-Type":["a"]}`, "5", "0")
	f.Add("in-progress", "1", "2", "3", "2", `{}`, "", "", "", "")
	f.Add("absent", "x", "", "-1", "-3", `[`, "x", "null", "y", "1")
	f.Add("completed", "1", "2", "0", "0", "", "200", "rbenc1:0123456789abcdef", "4", "0")
	f.Fuzz(func(t *testing.T, st, ca, ea, lu, na, a1, status, header, bodyLen, omitted string) {
		r, err := decodeRecord(map[string]string{
			"st": st, "ca": ca, "ea": ea, "lu": lu, "na": na, "a1": a1,
			"os": status, "oh": header, "obl": bodyLen, "oo": omitted, "ob": "body",
		}, EncryptionKeys{[]byte("0123456789abcdef")})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if r.State == StateAbsent || r.State == StateExpired || r.State > StateExpired {
			t.Fatalf("decoded impossible state %s", r.State)
		}
		if (r.State == StateCompleted) != (r.Outcome != nil) {
			t.Fatalf("state %s with outcome %v", r.State, r.Outcome)
		}
		if len(r.Attempts) > 1 && na == "1" {
			t.Fatalf("%d attempts from na=1", len(r.Attempts))
		}
	})
}

package ledger

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// A record's Redis hash has these fields, kept short because a Reserve
// of an existing record returns them all:
//
//	tn op k   tenant, operation, key: the raw identity (never in a key name)
//	fp        fingerprint
//	st        state, as State.String spells it
//	ow in tok owner, its instance (run) and fencing token
//	lu        lease end, Unix ms; "0" when no lease
//	ca ea     created and expires, Unix ms
//	rs        reason given with Fail
//	nc gv mk  the current grant's nonce, verdict, and "1" when its owner
//	          promised to mark the action before sending
//	sn        "1" once an owner marked the action as sending
//	sd su     the current grant's settle time (ms), and when the last
//	          send's settle time ends (Unix ms), set by MarkSending and
//	          AddAttempt
//	na        number of attempts; a1..aN hold them as JSON, the oldest
//	          dropped past Config.MaxAttempts
//	os oh     outcome status and headers (JSON)
//	ob obh    outcome body (raw bytes) and its SHA-256
//	obl oo    outcome body length, and "1" when the body was omitted
//	oe        "1" when oh and ob are encrypted (EncryptionKeys.Seal), "0"
//	          when stored plain; absent in records written before it was
//	          kept, which EncryptionKeys.Open judges by the data
//	xb xr xa  an operator's settlement (Record.Settlement): by, reason,
//	xp xf     at (Unix ms), "1" when applied, reference; absent when no
//	          operator settled the action

// attemptJSON is one attempt as the scripts encode it. Numbers travel as
// strings because Lua's cjson prints doubles with 14 significant digits.
type attemptJSON struct {
	At    string `json:"at"`
	Class string `json:"class"`
	Owner string `json:"owner"`
	Token string `json:"token"`
}

// decodeRecord reads a record from its hash fields, decrypting the
// outcome's headers and body with keys.
func decodeRecord(f map[string]string, keys EncryptionKeys) (Record, error) {
	bad := func(field string) (Record, error) {
		return Record{}, fmt.Errorf("%w: field %s = %q", ErrCorrupt, field, f[field])
	}
	r := Record{
		Key:         Key{Tenant: f["tn"], Operation: f["op"], Key: f["k"]},
		Fingerprint: f["fp"],
		Owner:       f["ow"],
		Instance:    f["in"],
		Reason:      f["rs"],
		Sending:     f["sn"] == "1",
	}
	var err error
	if r.Settlement, err = decodeSettlement(f); err != nil {
		return Record{}, err
	}
	if r.State, err = ParseState(f["st"]); err != nil || r.State == StateAbsent || r.State == StateExpired {
		return bad("st")
	}
	if r.CreatedAt, err = unixMilli(f["ca"]); err != nil {
		return bad("ca")
	}
	if r.ExpiresAt, err = unixMilli(f["ea"]); err != nil {
		return bad("ea")
	}
	if r.LeaseUntil, err = unixMilli(f["lu"]); err != nil {
		return bad("lu")
	}
	if su, ok := f["su"]; ok {
		if r.SettleUntil, err = unixMilli(su); err != nil {
			return bad("su")
		}
	}
	n, err := strconv.Atoi(f["na"])
	if err != nil || n < 0 {
		return bad("na")
	}
	// The newest attempts are kept (see trim in the scripts): read back
	// from the last to the first one still there.
	first := n + 1
	for first > 1 {
		if _, ok := f["a"+strconv.Itoa(first-1)]; !ok {
			break
		}
		first--
	}
	for i := first; i <= n; i++ {
		name := "a" + strconv.Itoa(i)
		var a attemptJSON
		if err := json.Unmarshal([]byte(f[name]), &a); err != nil {
			return bad(name)
		}
		at, err1 := unixMilli(a.At)
		tok, err2 := strconv.ParseInt(a.Token, 10, 64)
		if err1 != nil || err2 != nil {
			return bad(name)
		}
		r.Attempts = append(r.Attempts, Attempt{N: i, At: at, Class: a.Class, Owner: a.Owner, Token: tok})
	}
	if r.State == StateCompleted {
		o := &Outcome{BodyHash: f["obh"], BodyOmitted: f["oo"] == "1"}
		if o.Status, err = strconv.Atoi(f["os"]); err != nil {
			return bad("os")
		}
		if o.BodyLen, err = strconv.ParseInt(f["obl"], 10, 64); err != nil {
			return bad("obl")
		}
		open := keys.Open
		if mark, ok := f["oe"]; ok {
			open = func(k Key, field string, data []byte) ([]byte, error) {
				return keys.OpenStored(k, field, data, mark == "1")
			}
		}
		h, err := open(r.Key, "headers", []byte(f["oh"]))
		if err != nil {
			return Record{}, err
		}
		if err := json.Unmarshal(h, &o.Header); err != nil {
			return bad("oh")
		}
		if o.Header == nil {
			o.Header = http.Header{}
		}
		if !o.BodyOmitted {
			if o.Body, err = open(r.Key, "body", []byte(f["ob"])); err != nil {
				return Record{}, err
			}
		}
		r.Outcome = o
	}
	return r, nil
}

// unixMilli parses a Unix millisecond time; "0" is the zero Time.
func unixMilli(s string) (time.Time, error) {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms < 0 {
		return time.Time{}, fmt.Errorf("bad time %q", s)
	}
	if ms == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(ms), nil
}

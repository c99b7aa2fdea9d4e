package rateheader

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

// now is the arrival time used by the parser tests.
var now = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// header builds an http.Header from name, value pairs; a name may repeat
// to make several field lines.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestParseIETF(t *testing.T) {
	sec := func(n int) time.Time { return now.Add(time.Duration(n) * time.Second) }
	tests := []struct {
		name string
		h    http.Header
		want []Quota
	}{
		{"none", header(), nil},
		{"current draft", header("RateLimit", `"default";r=50;t=30`),
			[]Quota{{Policy: "default", Remaining: 50, Reset: sec(30)}}},
		{"current draft with policy", header("RateLimit", `"default";r=0;t=30`, "RateLimit-Policy", `"default";q=100;w=60`),
			[]Quota{{Policy: "default", Remaining: 0, Limit: 100, Window: time.Minute, Reset: sec(30)}}},
		{"several policies over two lines", header(
			"RateLimit", `"permin";r=0;t=20`, "RateLimit", `"perhr";r=900;t=1800`,
			"RateLimit-Policy", `"permin";q=50;w=60,"perhr";q=1000;w=3600`),
			[]Quota{
				{Policy: "permin", Remaining: 0, Limit: 50, Window: time.Minute, Reset: sec(20)},
				{Policy: "perhr", Remaining: 900, Limit: 1000, Window: time.Hour, Reset: sec(1800)},
			}},
		{"token name, no t, partition key", header("RateLimit", `default;r=999;pk=:dHJpYWwxMjEzMjM=:`),
			[]Quota{{Policy: "default", Remaining: 999}}},
		{"member without r skipped", header("RateLimit", `"a";t=5, "b";r=3;t=5`),
			[]Quota{{Policy: "b", Remaining: 3, Reset: sec(5)}}},
		{"negative r skipped", header("RateLimit", `"a";r=-1;t=5`), nil},
		{"decimal r skipped", header("RateLimit", `"a";r=1.5;t=5`), nil},
		{"string r skipped", header("RateLimit", `"a";r="1";t=5`), nil},
		{"negative t skipped", header("RateLimit", `"a";r=0;t=-5`), nil},
		{"t beyond a day skipped", header("RateLimit", `"a";r=0;t=86401`), nil},
		{"t of a day kept", header("RateLimit", `"a";r=0;t=86400`),
			[]Quota{{Policy: "a", Remaining: 0, Reset: sec(86400)}}},
		{"integer item is not a service limit", header("RateLimit", `5;r=0;t=5`), nil},
		{"malformed field ignored whole", header("RateLimit", `"a";r=0;t=5, "b";r=`), nil},
		{"malformed policy ignored", header("RateLimit", `"a";r=0;t=5`, "RateLimit-Policy", `"a";q=10;w=`),
			[]Quota{{Policy: "a", Remaining: 0, Reset: sec(5)}}},
		{"policy with bad w keeps quota", header("RateLimit", `"a";r=1`, "RateLimit-Policy", `"a";q=10;w=0`),
			[]Quota{{Policy: "a", Remaining: 1, Limit: 10}}},
		{"draft 07 dictionary", header("RateLimit", `limit=100, remaining=0, reset=5`, "RateLimit-Policy", `100;w=10`),
			[]Quota{{Remaining: 0, Limit: 100, Reset: sec(5), Window: 10 * time.Second}}},
		{"draft 07 without remaining", header("RateLimit", `limit=100, reset=5`), nil},
		{"draft 07 bad reset", header("RateLimit", `limit=100, remaining=0, reset=-5`), nil},
		{"separate fields", header("RateLimit-Limit", "100", "RateLimit-Remaining", "0", "RateLimit-Reset", "7"),
			[]Quota{{Remaining: 0, Limit: 100, Reset: sec(7)}}},
		{"separate fields, limit with policies", header("RateLimit-Limit", "10, 10;w=1, 50;w=60", "RateLimit-Remaining", "3"),
			[]Quota{{Remaining: 3, Limit: 10}}},
		{"separate fields, window from policy", header("RateLimit-Limit", "50", "RateLimit-Remaining", "3", "RateLimit-Policy", "10;w=1, 50;w=60"),
			[]Quota{{Remaining: 3, Limit: 50, Window: time.Minute}}},
		{"separate fields, epoch reset", header("RateLimit-Remaining", "0", "RateLimit-Reset", "1796209230"),
			[]Quota{{Remaining: 0, Reset: time.Unix(1796209230, 0)}}},
		{"separate fields, garbage reset", header("RateLimit-Remaining", "0", "RateLimit-Reset", "soon"),
			[]Quota{{Remaining: 0}}},
		{"separate fields, two remaining lines", header("RateLimit-Remaining", "1", "RateLimit-Remaining", "2"), nil},
		{"separate fields, negative remaining", header("RateLimit-Remaining", "-1"), nil},
		{"both generations", header("RateLimit", `"a";r=5;t=5`, "RateLimit-Remaining", "0", "RateLimit-Reset", "9"),
			[]Quota{{Policy: "a", Remaining: 5, Reset: sec(5)}, {Remaining: 0, Reset: sec(9)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseIETF(tt.h, now)
			for i := range got {
				got[i].Reset = got[i].Reset.UTC()
			}
			for i := range tt.want {
				tt.want[i].Reset = tt.want[i].Reset.UTC()
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseIETF =\n  %+v\nwant\n  %+v", got, tt.want)
			}
		})
	}
}

func TestQuotaPauseUntil(t *testing.T) {
	later := now.Add(time.Minute)
	tests := []struct {
		q    Quota
		want time.Time
	}{
		{Quota{Remaining: 0, Reset: later}, later},
		{Quota{Remaining: 1, Reset: later}, time.Time{}},
		{Quota{Remaining: 0}, time.Time{}},
		{Quota{Remaining: 0, Reset: now}, time.Time{}},
		{Quota{Remaining: 0, Reset: now.Add(-time.Second)}, time.Time{}},
	}
	for _, tt := range tests {
		got, ok := tt.q.PauseUntil(now)
		if !got.Equal(tt.want) || ok != !tt.want.IsZero() {
			t.Errorf("%+v.PauseUntil = %v, %v; want %v", tt.q, got, ok, tt.want)
		}
	}
}

// FuzzIETF checks that ParseIETF never panics on any field values and
// keeps every result within its documented bounds.
func FuzzIETF(f *testing.F) {
	for _, seed := range [][3]string{
		{`"default";r=50;t=30`, `"default";q=100;w=60`, ``},
		{`limit=100, remaining=0, reset=5`, `100;w=10`, ``},
		{``, `10;w=1, 50;w=60`, `0`},
		{`"p";r=1;pk=:cHsdsRa894==:;n=%"caf%c3%a9";d=@1`, `(1 2);w=3`, `1796209230`},
		{`"a";r=999999999999999;t=86400`, `"a";q=-1`, `-1`},
		{`a=(1 "x");q, b=?1`, `"\\"`, `1.5`},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, rl, policy, remaining string) {
		h := header("RateLimit", rl, "RateLimit-Policy", policy,
			"RateLimit-Remaining", remaining, "RateLimit-Limit", remaining, "RateLimit-Reset", remaining)
		for _, q := range ParseIETF(h, now) {
			if q.Remaining < 0 || q.Limit < 0 || q.Window < 0 || q.Window > MaxReset {
				t.Fatalf("out of bounds: %+v", q)
			}
			if !q.Reset.IsZero() && q.Reset.After(now.Add(MaxReset)) {
				t.Fatalf("reset beyond MaxReset: %+v", q)
			}
		}
	})
}

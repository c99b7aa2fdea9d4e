package rateheader

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
)

func TestParseList(t *testing.T) {
	tests := []struct {
		in   string
		want string // items as kind:value;params, "|" between; "FAIL" when invalid
	}{
		{`"default";r=50;t=30`, `string:default;r=50;t=30`},
		{`"a";q=1, b;q=2`, `string:a;q=1|token:b;q=2`},
		{`1, 42;w=60`, `int:1|int:42;w=60`},
		{`-7`, `int:-7`},
		{`1.5, 3.125`, `decimal:1.5|decimal:3.125`},
		{`"p";r=1;pk=:cHsdsRa894==:`, `string:p;r=1;pk=bytes`},
		{`"p";flag;x=?0`, `string:p;flag=true;x=false`},
		{`"p";d=@1659578233`, `string:p;d=date`},
		{`"p";n=%"caf%c3%a9"`, `string:p;n=display`},
		{`(1 2);w=3, "x"`, `inner;w=3|string:x`},
		{`"esc\"aped\\"`, `string:esc"aped\`},
		{`a:b/c*d`, `token:a:b/c*d`},
		{"\"a\" ,\t\"b\"", `string:a|string:b`},
		{`"a";r=1;r=2`, `string:a;r=2`},
		{``, ``},
		{`"a",`, `FAIL`},
		{`"a" "b"`, `FAIL`},
		{`"unterminated`, `FAIL`},
		{`"bad\escape"`, `FAIL`},
		{"\"ctl\x01\"", `FAIL`},
		{`1234567890123456`, `FAIL`},
		{`1234567890123.1`, `FAIL`},
		{`1.1234`, `FAIL`},
		{`1.`, `FAIL`},
		{`.5`, `FAIL`},
		{`-`, `FAIL`},
		{`"a";R=1`, `FAIL`},
		{`"a";r=`, `FAIL`},
		{`:abc$:`, `FAIL`},
		{`:=aGVsbG8=:`, `FAIL`},
		{`:a=GVsbG8=:`, `FAIL`},
		{`:abc`, `FAIL`},
		{`?2`, `FAIL`},
		{`@1.5`, `FAIL`},
		{`@`, `FAIL`},
		{`%"caf%C3%A9"`, `FAIL`},
		{`%"%ff"`, `FAIL`},
		{`(1 2`, `FAIL`},
		{`(1,2)`, `FAIL`},
		{`limit=100, remaining=50`, `FAIL`},
	}
	for _, tt := range tests {
		items, ok := parseList(tt.in)
		got := "FAIL"
		if ok {
			got = describeItems(items)
		}
		if got != tt.want {
			t.Errorf("parseList(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

func TestParseDictionary(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{`limit=100, remaining=50, reset=30`, `limit=int:100|remaining=int:50|reset=int:30`},
		{`a, b;x=1`, `a=bool:true|b=bool:true;x=1`},
		{`a=1, a=2`, `a=int:2`},
		{`a=(1 2)`, `a=inner`},
		{`"default";r=50`, `FAIL`},
		{`a=1,`, `FAIL`},
		{`A=1`, `FAIL`},
		{`a=`, `FAIL`},
	}
	for _, tt := range tests {
		d, ok := parseDictionary(tt.in)
		got := "FAIL"
		if ok {
			parts := make([]string, 0, len(d.Names()))
			for _, k := range d.Names() {
				m, _ := d.Get(k)
				parts = append(parts, k+"="+describeItems(httpsfv.List{m}))
			}
			got = strings.Join(parts, "|")
		}
		if got != tt.want {
			t.Errorf("parseDictionary(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

func TestParseItem(t *testing.T) {
	for in, want := range map[string]string{
		"42":     "int:42",
		" 42 ":   "int:42",
		"42, 43": "FAIL",
		"42;w=1": "int:42;w=1",
		"":       "FAIL",
	} {
		it, ok := parseItem(in)
		got := "FAIL"
		if ok {
			got = describeItems(httpsfv.List{it})
		}
		if got != want {
			t.Errorf("parseItem(%q) = %s; want %s", in, got, want)
		}
	}
}

func TestJoinFieldBoundsTheLength(t *testing.T) {
	if _, ok := joinField([]string{strings.Repeat("a", maxFieldLen+1)}); ok {
		t.Fatal("a field longer than maxFieldLen was accepted")
	}
	if v, ok := joinField([]string{`"a";r=1`, `"b";r=2`}); !ok || v != `"a";r=1,"b";r=2` {
		t.Fatalf("joinField = %q, %v; want the lines joined with a comma", v, ok)
	}
}

// describeItems renders members compactly for table comparisons.
func describeItems(members httpsfv.List) string {
	parts := make([]string, len(members))
	for i, m := range members {
		var params *httpsfv.Params
		switch m := m.(type) {
		case httpsfv.Item:
			parts[i], params = describeBare(m.Value), m.Params
		case httpsfv.InnerList:
			parts[i], params = "inner", m.Params
		}
		for _, k := range params.Names() {
			v, _ := params.Get(k)
			parts[i] += ";" + k + "=" + strings.TrimPrefix(strings.TrimPrefix(describeBare(v), "int:"), "bool:")
		}
	}
	return strings.Join(parts, "|")
}

func describeBare(v any) string {
	switch v := v.(type) {
	case int64:
		return "int:" + strconv.FormatInt(v, 10)
	case float64:
		return "decimal:" + strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		return "string:" + v
	case httpsfv.Token:
		return "token:" + string(v)
	case []byte:
		return "bytes"
	case bool:
		return "bool:" + strconv.FormatBool(v)
	case time.Time:
		return "date"
	case httpsfv.DisplayString:
		return "display"
	}
	return "?"
}

package rateheader

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dunglas/httpsfv"
)

// TestFieldOver16KiBIsIgnored pins that a RateLimit field longer than
// maxFieldLen is ignored whole, though valid: no rate-limit field comes near
// that size, and RFC 9651 §4.2 lets a parser fail fields beyond its limits.
func TestFieldOver16KiBIsIgnored(t *testing.T) {
	valid := `"default";r=50;t=30`
	pad := ", " + strings.Repeat(`"x";r=1, `, maxFieldLen/9) + `"y";r=1`
	if got := ParseIETF(header("RateLimit", valid+pad), now); got != nil {
		t.Fatalf("a %d-byte field gave %d quotas; want it ignored", len(valid+pad), len(got))
	}
	// The bound is on the combined field: two lines under it alone, over
	// it together, are ignored too.
	half := strings.Repeat(`"x";r=1, `, maxFieldLen/18) + `"y";r=1`
	if got := ParseIETF(header("RateLimit", valid+", "+half, "RateLimit", half), now); got != nil {
		t.Fatalf("field lines over the bound together gave %d quotas; want them ignored", len(got))
	}
	if got := ParseIETF(header("RateLimit", valid), now); len(got) != 1 || got[0].Remaining != 50 {
		t.Fatalf("the same field under the bound gave %+v; want one quota", got)
	}
}

// TestSyntaxErrorFailsTheWholeField pins RFC 9651 §4.2: one malformed
// member fails the whole field, so the valid members beside it are not
// read either, in whichever field line the error stands.
func TestSyntaxErrorFailsTheWholeField(t *testing.T) {
	for _, lines := range [][]string{
		{`"a";r=5;t=10, "b";r=`},
		{`"a";r=5;t=10`, `"b";r="unterminated`},
		{`"a";r=5;t=10, :=aGVsbG8=:`},  // "=" padding at the start of a Byte Sequence
		{`"a";r=5;t=10, "b";r=1.2345`}, // a Decimal with four fraction digits
	} {
		var kv []string
		for _, l := range lines {
			kv = append(kv, "RateLimit", l)
		}
		if got := ParseIETF(header(kv...), now); got != nil {
			t.Errorf("RateLimit %q gave %+v; want the whole field ignored", lines, got)
		}
	}
}

// TestUnpaddedByteSequenceIsAccepted pins the one case read around
// dunglas/httpsfv: a Byte Sequence without its "=" padding, which RFC 9651
// §4.2.7 says a parser SHOULD NOT fail and the library fails. A partition
// key sent unpadded keeps the RateLimit field it stands in.
func TestUnpaddedByteSequenceIsAccepted(t *testing.T) {
	if _, err := httpsfv.UnmarshalList([]string{`"a";r=5;pk=:aGVsbG8:`}); err == nil {
		t.Log("the library now accepts an unpadded Byte Sequence: padByteSequences may go")
	}
	got := ParseIETF(header("RateLimit", `"a";r=5;t=10;pk=:aGVsbG8:`), now)
	if len(got) != 1 || got[0].Policy != "a" || got[0].Remaining != 5 {
		t.Fatalf("RateLimit with an unpadded pk gave %+v; want policy a with 5 remaining", got)
	}
	for in, want := range map[string]string{
		`:aGVsbG8:`:             `:aGVsbG8=:`,
		`:aGVsbA:`:              `:aGVsbA==:`,
		`:aGVsbG8=:`:            `:aGVsbG8=:`,
		`::`:                    `::`,
		`"a";pk=:aGk:, b=:aGk:`: `"a";pk=:aGk=:, b=:aGk=:`,
		`(:aGk: :aGk:)`:         `(:aGk=: :aGk=:)`,
		`"x :aGk:", a:b:c`:      `"x :aGk:", a:b:c`, // in a String, in a Token
		`%"\", "x :aGk:"`:       `%"\", "x :aGk:"`,  // a Display String has no escapes
		`"\":aGk:", %"a:aGk:"`:  `"\":aGk:", %"a:aGk:"`,
		`"unterminated :aGk:`:   `"unterminated :aGk:`,
		`:aGk`:                  `:aGk`,
		`:a:`:                   `:a:`, // not base64 once padded: left to fail
	} {
		if got := padByteSequences(in); got != want {
			t.Errorf("padByteSequences(%q) = %q; want %q", in, got, want)
		}
	}
}

// FuzzPadByteSequences pins that padding never changes a field the library
// accepts as it is: the parse with padding is the library's own.
func FuzzPadByteSequences(f *testing.F) {
	for _, s := range []string{`"default";r=50;t=30;pk=:cHJvamVjdDEyMw==:`, `a=:aGk=:, b=(:aGk=: x)`,
		`"x :a:", %"\", "y"`, `"p";r=1;pk=:cHsdsRa894==:;n=%"caf%c3%a9";d=@1`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		padded := padByteSequences(s)
		if l, err := httpsfv.UnmarshalList([]string{s}); err == nil {
			got, err := httpsfv.UnmarshalList([]string{padded})
			if err != nil || !reflect.DeepEqual(got, l) {
				t.Fatalf("List %q: padded %q parses to %#v, %v; want %#v", s, padded, got, err, l)
			}
		}
		if d, err := httpsfv.UnmarshalDictionary([]string{s}); err == nil {
			got, err := httpsfv.UnmarshalDictionary([]string{padded})
			if err != nil || !reflect.DeepEqual(got, d) {
				t.Fatalf("Dictionary %q: padded %q parses to %#v, %v; want %#v", s, padded, got, err, d)
			}
		}
		if it, err := httpsfv.UnmarshalItem([]string{s}); err == nil {
			got, err := httpsfv.UnmarshalItem([]string{padded})
			if err != nil || !reflect.DeepEqual(got, it) {
				t.Fatalf("Item %q: padded %q parses to %#v, %v; want %#v", s, padded, got, err, it)
			}
		}
	})
}

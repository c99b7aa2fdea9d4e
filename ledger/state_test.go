package ledger

import (
	"errors"
	"testing"
)

func TestParseState(t *testing.T) {
	for st := StateAbsent; st <= StateExpired; st++ {
		got, err := ParseState(st.String())
		if err != nil || got != st {
			t.Errorf("ParseState(%q) = %v, %v", st.String(), got, err)
		}
	}
	for _, s := range []string{"", "IN-PROGRESS", "in_progress", "State(9)"} {
		if _, err := ParseState(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseState(%q) error = %v, want ErrInvalid", s, err)
		}
	}
}

func FuzzParseState(f *testing.F) {
	for st := StateAbsent; st <= StateExpired; st++ {
		f.Add(st.String())
	}
	f.Add("completed ")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseState(s)
		if err != nil {
			return
		}
		if st.String() != s {
			t.Fatalf("ParseState(%q) = %v, which prints %q", s, st, st.String())
		}
	})
}

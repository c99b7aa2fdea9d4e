package testenv

import "testing"

func TestRequired(t *testing.T) {
	const env = "RETRYBUDGET_TESTENV_PROBE"
	for _, tt := range []struct {
		value string
		want  bool
	}{
		{"", false}, {"0", false}, {"false", false}, {"yes", false},
		{"1", true}, {"true", true}, {"TRUE", true},
	} {
		t.Setenv(env, tt.value)
		if got := Required(env); got != tt.want {
			t.Errorf("Required with %s=%q = %v, want %v", env, tt.value, got, tt.want)
		}
	}
}

func TestUnavailableSkipsUnlessRequired(t *testing.T) {
	const env = "RETRYBUDGET_TESTENV_PROBE"
	t.Setenv(env, "")
	skipped := false
	t.Run("probe", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Unavailable(t, env, "no server")
	})
	if !skipped {
		t.Fatal("Unavailable did not skip without the variable")
	}
}

func TestFiguresReadsItsVariable(t *testing.T) {
	t.Setenv(FiguresEnv, "")
	if Figures() {
		t.Errorf("Figures with %s unset = true, want false", FiguresEnv)
	}
	t.Setenv(FiguresEnv, "1")
	if !Figures() {
		t.Errorf("Figures with %s=1 = false, want true", FiguresEnv)
	}
}

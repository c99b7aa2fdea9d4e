package console

import (
	"strings"
	"testing"
)

// TestSettledNoticeNamesOnlyAState: the "Settled" notice says what the
// console did, never text a link chose: the list shows none, and an
// action's page names only a state.
func TestSettledNoticeNamesOnlyAState(t *testing.T) {
	f := memoryFixture(t, Config{})
	hold(t, f.store, testKey("acme", secretKey))
	spoof := "settled=every+held+charge&as=applied+by+finance%2C+nothing+to+do"
	for _, path := range []string{"/?" + spoof, "/action/" + f.actionRef() + "?" + spoof} {
		if _, page := f.do("GET", path, testToken, nil); strings.Contains(page, "every held charge") || strings.Contains(page, `id="settled"`) {
			t.Errorf("GET %s shows the link's text as a notice", path)
		}
	}
}

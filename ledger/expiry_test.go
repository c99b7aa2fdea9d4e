package ledger

import (
	"strconv"
	"strings"
	"testing"
)

// TestLuaSpellsExpiryGrace pins that the scripts drop a record
// ExpiryGrace after its retention, as the Go side documents.
func TestLuaSpellsExpiryGrace(t *testing.T) {
	ms := strconv.FormatInt(ExpiryGrace.Milliseconds(), 10)
	for name, src := range map[string]string{"reserve.lua": reserveLua, "renew.lua": renewLua} {
		if !strings.Contains(src, "int(ea) + "+ms+")") {
			t.Errorf("%s does not expire records ExpiryGrace (%s ms) past ea", name, ms)
		}
	}
}

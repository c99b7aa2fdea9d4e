package idempotency

import (
	"os"
	"strings"
	"testing"
)

// TestOpenAPIDocumentsEveryProblem keeps docs/openapi.yaml true to the
// middleware: every problem type URI and every status it answers with are
// documented there.
func TestOpenAPIDocumentsEveryProblem(t *testing.T) {
	doc, err := os.ReadFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := string(doc)
	for _, typ := range []string{TypeMissingKey, TypeMalformedKey, TypeBodyTooLarge, TypeBodyUnreadable,
		TypePending, TypeConflict, TypeUncertain, TypeLedgerUnavailable, TypeNoTenant, TypeLedgerFull, TypeBusy} {
		if !strings.Contains(spec, typ) {
			t.Errorf("docs/openapi.yaml does not document problem type %s", typ)
		}
	}
	for _, status := range []string{"'400'", "'409'", "'413'", "'422'", "'503'"} {
		if !strings.Contains(spec, status+":") {
			t.Errorf("docs/openapi.yaml has no %s response", status)
		}
	}
	for _, h := range []string{DefaultKeyHeader, HeaderReplayed, HeaderBodyOmitted, "Retry-After"} {
		if !strings.Contains(spec, h) {
			t.Errorf("docs/openapi.yaml does not mention the %s header", h)
		}
	}
}

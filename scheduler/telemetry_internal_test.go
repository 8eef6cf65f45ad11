package scheduler

import (
	"os"
	"strings"
	"testing"
)

// Every result of solocron.claims is explained where the metric is, in
// docs/monitoring.md: an operator reading result="later" on a dashboard
// finds what it means.
func TestClaimResultsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/monitoring.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| `solocron_claims_total`") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/monitoring.md has no row for solocron_claims_total")
	}
	for _, r := range []string{claimWon, claimTaken, claimWaiting, claimRefused, claimError, claimDecided, claimEarly, claimLater, claimUndone} {
		if !strings.Contains(row, "`"+r+"`") {
			t.Errorf("claim result %q is not explained in docs/monitoring.md's solocron_claims_total row", r)
		}
	}
}

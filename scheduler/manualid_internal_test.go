package scheduler

import (
	"strings"
	"testing"
)

// IsManualRunID recognizes every id newManualID draws, and nothing that
// only looks like one: the console trusts it to show a run "requested"
// that no record backs yet.
func TestIsManualRunIDAgreesWithNewManualID(t *testing.T) {
	long := strings.Repeat("j", 128)
	for _, job := range []string{"sweep", "a", "nightly-report_2.v1", long} {
		for range 200 {
			if id := newManualID(job); !IsManualRunID(id) {
				t.Fatalf("newManualID(%q) = %q, which IsManualRunID does not recognize", job, id)
			}
		}
	}
	id := newManualID("sweep")
	secs := strings.TrimSuffix(strings.TrimPrefix(id, "sweep@manual-"), id[len(id)-12:])
	for _, near := range []string{
		"",
		"sweep",
		"sweep@manual-",
		"sweep@2026-11-27T10:00:00Z",             // a scheduled run's id
		"@manual-" + secs + "0123456789ab",       // no job
		"swe ep@manual-" + secs + "0123456789ab", // not a job name
		long + "j@manual-" + secs + "0123456789ab",               // a job name too long
		"sweep@Manual-" + secs + "0123456789ab",                  // the mark's case
		"sweep@manual" + secs + "0123456789ab",                   // no dash
		"sweep@manual-" + secs + "0123456789AB",                  // upper case hex
		"sweep@manual-zzzzzz0123456789a",                         // 11 hex digits after a second
		"sweep@manual-" + secs + "0123456789ag",                  // not hex
		"sweep@manual-0123456789ab",                              // no second
		"sweep@manual-0" + secs + "0123456789ab",                 // a leading zero
		"sweep@manual-" + secs + "-0123456789ab",                 // a sign
		"sweep@manual-" + strings.ToUpper(secs) + "0123456789ab", // upper case base 36
		"sweep@manual-zzzzzzzzzzzzzzzzzzzz0123456789ab",          // past int64
		"sweep@manual-" + secs + "0123456789ab/",                 // a trailing slash
		"sweep@manual-" + secs + "0123456789ab ",                 // a space
		"a@sweep@manual-" + secs + "0123456789ab",                // two @
	} {
		if IsManualRunID(near) {
			t.Errorf("IsManualRunID(%q) = true, want false", near)
		}
	}
	for _, ok := range []string{"sweep@manual-0" + "0123456789ab", "sweep@manual-" + secs + "0123456789ab"} {
		if !IsManualRunID(ok) {
			t.Errorf("IsManualRunID(%q) = false, want true", ok)
		}
	}
}

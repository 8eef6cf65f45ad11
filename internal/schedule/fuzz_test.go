package schedule

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse feeds Parse arbitrary text; it must never panic, errors must be
// *Error naming a known field, and a schedule it accepts must give instants
// strictly after the time asked about (or none). The seed corpus is in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, spec, tz string, offset, at int64) {
		s, err := Parse(spec, tz, time.Duration(offset))
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse(%q, %q, %d): error %v is a %T, want *Error", spec, tz, offset, err, err)
			}
			switch perr.Field {
			case "Schedule", "Timezone", "Offset":
			default:
				t.Fatalf("Parse(%q, %q, %d): Field %q", spec, tz, offset, perr.Field)
			}
			if err.Error() == "" {
				t.Fatalf("Parse(%q, %q, %d): empty message", spec, tz, offset)
			}
			return
		}
		if s.String() != spec || s.Location() == nil {
			t.Fatalf("Parse(%q, %q, %d): String() = %q, Location() = %v", spec, tz, offset, s.String(), s.Location())
		}
		from := time.Unix(at, 0)
		for range 3 {
			next := s.Next(from)
			if next.IsZero() {
				return
			}
			if !next.After(from) {
				t.Fatalf("%q in %q: Next(%v) = %v, not after it", spec, tz, from, next)
			}
			if every := int64(s.Every() / time.Second); every > 0 && (next.Unix()-offset/int64(time.Second))%every != 0 {
				t.Fatalf("%q offset %d: Next(%v) = %v, off the epoch grid", spec, offset, from, next)
			}
			from = next
		}
	})
}

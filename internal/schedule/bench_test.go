package schedule

import (
	"testing"
	"time"
)

// BenchmarkNext measures Next from times spread over two years, as the
// scheduler calls it: once per run, from the previous instant or from now.
func BenchmarkNext(b *testing.B) {
	benchmarks := []struct {
		name, spec, tz string
	}{
		{"every", "@every 10s", ""},
		{"six-fields", "0 */5 * * * *", ""},
		{"zoned-fixed", "0 30 9 * * MON-FRI", "Europe/Berlin"},
		{"zoned-wildcard", "*/15 * * * *", "America/New_York"},
		{"zoned-sparse", "0 0 29 2 *", "Europe/Berlin"},
		// The slow case: a wildcard hour follows every offset change until
		// a rare day comes.
		{"zoned-wildcard-sparse", "0 * 29 2 *", "Europe/Berlin"},
	}
	var starts [1024]time.Time
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range starts {
		starts[i] = base.Add(time.Duration(i)*17*time.Hour + time.Duration(i)*7919*time.Millisecond)
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			s, err := Parse(bm.spec, bm.tz, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if s.Next(starts[i%len(starts)]).IsZero() {
					b.Fatal("no next instant")
				}
				i++
			}
		})
	}
}

// Next allocates nothing, for any kind of spec.
func TestNextAllocs(t *testing.T) {
	at := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC) // near a change in Berlin
	for _, spec := range []string{"@every 10s", "0 */5 * * * *", "30 2 * * *", "*/15 * * * *", "0 0 29 2 *"} {
		s, err := Parse(spec, "Europe/Berlin", 0)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { s.Next(at) }); n != 0 {
			t.Errorf("%q: Next allocates %v times per call, want 0", spec, n)
		}
	}
}

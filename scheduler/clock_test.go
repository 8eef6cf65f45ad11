package scheduler

import (
	"testing"
	"time"
)

// A reading of Redis' clock taken in a slow round trip (Redis busy with
// another replica's batch) is off by up to half of it: it must not displace
// a quick reading taken a second before, or runs claimed ahead would start
// milliseconds before their instant. Once the quick one has aged past it,
// the slow one is kept.
func TestClockKeepsTheMostCertainReading(t *testing.T) {
	var c redisClock
	t0 := time.Now()
	// Quick: Redis read its clock, equal to ours, in a 200µs round trip.
	c.observe(t0.Add(100*time.Microsecond), t0, t0.Add(200*time.Microsecond))
	// Slow, a second later: 20ms round trip, Redis read its clock at the
	// very end of it (it was busy), so the midpoint is 10ms off.
	sent := t0.Add(time.Second)
	c.observe(sent.Add(20*time.Millisecond), sent, sent.Add(20*time.Millisecond))
	at, _ := c.localAt(t0.Add(2 * time.Second))
	if off := at.Sub(t0.Add(2 * time.Second)); off < -time.Millisecond || off > time.Millisecond {
		t.Fatalf("Redis' clock placed %s off after a slow reading; want the quick reading kept", off)
	}
	// The clock check uses the last reading, whatever its round trip.
	if r := c.last.Load(); r.rtt != 20*time.Millisecond {
		t.Fatalf("last reading has round trip %s; want the slow one (20ms)", r.rtt)
	}
	// A quarter of an hour on, the quick reading may have drifted by more
	// than the slow one is off: the slow one is taken.
	sent = t0.Add(15 * time.Minute)
	c.observe(sent.Add(20*time.Millisecond), sent, sent.Add(20*time.Millisecond))
	if r := c.best.Load(); r.rtt != 20*time.Millisecond {
		t.Fatalf("kept a reading with round trip %s; want the fresh one (20ms)", r.rtt)
	}
	// A quick reading always replaces a slow one.
	sent = t0.Add(15*time.Minute + time.Second)
	c.observe(sent.Add(50*time.Microsecond), sent, sent.Add(100*time.Microsecond))
	if r := c.best.Load(); r.rtt != 100*time.Microsecond {
		t.Fatalf("kept a reading with round trip %s; want the quick one", r.rtt)
	}
}

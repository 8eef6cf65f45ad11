package scheduler

import (
	"sync/atomic"
	"time"
)

// clockMargin is how far beyond the max clock skew a replica's clock may be
// from Redis' before the replica stops claiming scheduled runs: room for
// the round trip in which Redis' clock was read.
const clockMargin = time.Second

// redisClock estimates Redis' clock between heartbeats: the time Redis
// answered with, carried forward on this process's monotonic clock, which
// a step of the wall clock (NTP, a VM resumed, an operator) does not move.
// It keeps two readings. The last one says whether this replica's clock
// agrees with Redis' (a step of either clock shows at the next heartbeat).
// The most certain one places the instants of runs claimed ahead: a reading
// taken while Redis was busy with another replica's batch is off by up to
// half its round trip, which would start those runs milliseconds early or
// late, so a quick reading is kept until it has aged past a slower one.
type redisClock struct {
	last atomic.Pointer[clockReading]
	best atomic.Pointer[clockReading]
}

type clockReading struct {
	server time.Time     // Redis' TIME, no monotonic reading
	at     time.Time     // time.Now() (monotonic) when Redis read it, at best
	rtt    time.Duration // the round trip Redis read it in: the reading is off by up to half
}

// A reading's uncertainty grows with its age by 1/readingAging: 0.1 ms a
// second, more than clocks drift. A step of Redis' clock could leave the
// best reading wrong for longer; it only ever places a start inside the
// round trip of the claim that won it (see handle), so it cannot move a
// start by more than that round trip.
const readingAging = 10000

// uncertainty is how far off r may be at now.
func (r *clockReading) uncertainty(now time.Time) time.Duration {
	return r.rtt/2 + now.Sub(r.at)/readingAging
}

// maxReadingRTT bounds the round trip of a reading of Redis' clock worth
// keeping: Redis read its clock somewhere within it, so a reading is off by
// up to half of it. A slow answer (a failover, a stalled Redis) would move
// the estimate by seconds; the last quick one is kept instead, carried
// forward on the monotonic clock.
const maxReadingRTT = 200 * time.Millisecond

// observe records Redis' clock as read by a round trip from sent to got.
func (c *redisClock) observe(server, sent, got time.Time) {
	if server.IsZero() || got.Sub(sent) > maxReadingRTT {
		return
	}
	r := &clockReading{server: server.Round(0), at: sent.Add(got.Sub(sent) / 2), rtt: got.Sub(sent)}
	c.last.Store(r)
	if old := c.best.Load(); old == nil || r.uncertainty(got) <= old.uncertainty(got) {
		c.best.Store(r)
	}
}

// offset is how far local runs ahead of Redis' clock (negative: behind),
// by the last reading; ok is false until Redis has answered once.
func (c *redisClock) offset(local time.Time) (d time.Duration, ok bool) {
	r := c.last.Load()
	if r == nil {
		return 0, false
	}
	return local.Round(0).Sub(r.server.Add(time.Since(r.at))), true
}

// localAt is the time on this process' monotonic clock at which Redis'
// clock reads t, by the most certain reading; ok is false until Redis has
// answered once.
func (c *redisClock) localAt(t time.Time) (at time.Time, ok bool) {
	r := c.best.Load()
	if r == nil {
		return time.Time{}, false
	}
	return r.at.Add(t.Sub(r.server)), true
}

// clockTolerance is how far the replica's clock may be from Redis' before
// it is taken for wrong rather than skewed.
func (s *Scheduler) clockTolerance() time.Duration { return s.cfg.skew + clockMargin }

// clockTrusted reports whether the replica's clock agrees with Redis'
// within the max clock skew (and the margin for reading it), logging when
// that changes. A replica whose clock is off by more claims no scheduled
// or catch-up runs: it would claim them at the wrong time, and one an hour
// ahead would see an hour of future instants as past. Until Redis has
// answered once there is nothing to compare with, and the clock is trusted.
func (s *Scheduler) clockTrusted(now time.Time) bool {
	off, ok := s.redisClock.offset(now)
	bad := ok && (off > s.clockTolerance() || off < -s.clockTolerance())
	if s.clockBad.Swap(bad) != bad {
		if bad {
			s.log.Error("this replica's clock is off from Redis' by more than max_clock_skew: it claims no scheduled runs until they agree",
				"offset", off.Round(time.Millisecond), "max_clock_skew", s.cfg.skew)
		} else {
			s.log.Warn("this replica's clock agrees with Redis' again: claiming resumes", "offset", off.Round(time.Millisecond))
		}
	}
	return !bad
}

// Clock tells the time. Replicas compute scheduled instants from it; the
// default is the system clock. Tests and benchmarks inject skewed clocks.
type Clock interface {
	Now() time.Time
}

// ClockFunc adapts a function to a Clock.
type ClockFunc func() time.Time

// Now calls f.
func (f ClockFunc) Now() time.Time { return f() }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

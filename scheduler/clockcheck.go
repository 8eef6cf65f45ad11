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
type redisClock struct {
	p atomic.Pointer[clockReading]
}

type clockReading struct {
	server time.Time // Redis' TIME, no monotonic reading
	at     time.Time // time.Now() (monotonic) when Redis read it
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
	c.p.Store(&clockReading{server: server.Round(0), at: sent.Add(got.Sub(sent) / 2)})
}

// offset is how far local runs ahead of Redis' clock (negative: behind);
// ok is false until Redis has answered once.
func (c *redisClock) offset(local time.Time) (d time.Duration, ok bool) {
	r := c.p.Load()
	if r == nil {
		return 0, false
	}
	return local.Round(0).Sub(r.server.Add(time.Since(r.at))), true
}

// localAt is the time on this process' monotonic clock at which Redis'
// clock reads t; ok is false until Redis has answered once.
func (c *redisClock) localAt(t time.Time) (at time.Time, ok bool) {
	r := c.p.Load()
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

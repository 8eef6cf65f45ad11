// Package redlock is the arithmetic of the Redlock algorithm, written once
// for lockprovider's Redlock and the scheduler's Redlock store: how many of
// N independent masters make a quorum, the clock-drift allowance, and how
// long a grant stays valid.
package redlock

import "time"

// Quorum is the number of masters, out of masters, that must grant an
// operation: a strict majority, so that two quorums always share a master.
func Quorum(masters int) int { return masters/2 + 1 }

// Drift is the margin a holder gives up at the end of each lease of ttl to
// cover clock-rate differences between it and the masters: 1% of the TTL
// plus 2 ms, as in the Redlock algorithm.
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// Validity is how long a lease of ttl whose grant (or renewal) took elapsed,
// counted from when its request was sent, still holds: ttl − elapsed −
// Drift(ttl). The grant is good only while it is above zero.
func Validity(ttl, elapsed time.Duration) time.Duration { return ttl - elapsed - Drift(ttl) }

// Hopeless says whether refused final answers out of masters leave no
// quorum possible: more than masters − Quorum(masters) refused.
func Hopeless(masters, refused int) bool { return refused > masters-Quorum(masters) }

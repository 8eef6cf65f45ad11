// Package fencing holds the one implementation of fencing tokens that the
// scheduler and lockprovider share: the Lua functions (fence.lua, in Lua)
// their scripts prepend.
//
// A fencing token is the Redis server's TIME in microseconds, bumped past
// the last token issued for the same name (and past any floor the caller
// adds): fence_after(now_us, last, floor) is now_us when that is above them
// all, else their maximum plus one. Its properties:
//
//   - Strictly increasing per name while Redis keeps the last token: each
//     token is above the one before it, even when the server clock stands
//     still or steps back.
//   - Still rising after Redis forgets the last token (a restart without
//     persistence, a failover to a replica that missed writes, FLUSHALL, the
//     counter's own expiry), because it is anchored to the server's clock:
//     the next token is the time now, above every token issued before as long
//     as the clock has not stepped back by more than the time since then.
//   - Comparable across primitives and with time: two tokens of one name are
//     ordered as their grants were; a token is about the moment (in µs since
//     the epoch) it was issued, so it fits a Lua number (a double) exactly
//     and an int64 for centuries.
//
// A store that keeps the highest token it has accepted and refuses lower
// ones thereby refuses the writes of a holder that lost its lease without
// knowing it.
//
// The functions (all local, so a script may shadow none of them by
// accident — they are prefixed fence_):
//
//	fence_clock()               -> now_ms, now_us    one TIME call
//	fence_now_us()              -> "digits"          one TIME call, as a string
//	fence_after(now_us, ...)    -> token             the rule above
//	fence_int(n)                -> "digits"          for storing a token
package fencing

import _ "embed"

// Lua is fence.lua, to prepend to every script that issues tokens.
//
//go:embed fence.lua
var Lua string

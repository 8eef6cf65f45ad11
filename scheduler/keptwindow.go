package scheduler

import "strconv"

// keptWindow cuts a read of a job's history list (from its entry offset
// on) to the kept history: the list's first h:n entries (the meta's count,
// hn as read). The store trims the list to history_limit in steps, not on
// every record filed (common.lua's push_entry), so it may hold a few
// older entries past them, which no reader shows. hn nil or not a number
// (no counts yet, a store from before them): the list is trimmed exactly,
// and all of it is kept.
func keptWindow(raw []string, hn any, offset int) []string {
	var n int
	switch v := hn.(type) {
	case string:
		k, err := strconv.Atoi(v)
		if err != nil {
			return raw
		}
		n = k
	default:
		return raw
	}
	n -= offset
	if n <= 0 {
		return nil
	}
	if n < len(raw) {
		return raw[:n]
	}
	return raw
}

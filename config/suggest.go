package config

import "strings"

// Suggest returns the entry of known closest to name, if it is close enough
// to be a likely typo (see suggest), else "": the command line's "did you
// mean" for a command uses the same rule as the loader's for a field.
func Suggest(name string, known []string) string { return suggest(name, known) }

// suggest returns the entry of known closest to name, if it is close enough
// to be a likely typo: the same once case, '_' and '-' are ignored
// ("maxWait", "max-wait" → "max_wait"), or within an edit distance of 1 for
// short names and 2 for names of five or more letters.
func suggest(name string, known []string) string {
	if len(name) > 64 {
		return ""
	}
	norm := normalize(name)
	limit := 0
	switch {
	case len(name) >= 5:
		limit = 2
	case len(name) >= 3:
		limit = 1
	}
	best, bestDist := "", limit+1
	for _, k := range known {
		if normalize(k) == norm {
			return k
		}
		if dist := levenshtein(strings.ToLower(name), k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	return best
}

func normalize(s string) string {
	s = strings.ToLower(s)
	return strings.NewReplacer("_", "", "-", "").Replace(s)
}

// levenshtein is the edit distance between a and b, in bytes (field names
// are ASCII).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Package suggest finds the names closest to a mistyped one, for "did you mean"
// hints in error messages. It only ever returns names, never values.
package suggest

import (
	"sort"
	"strings"
)

// Nearest returns up to three candidates close to name, closest first: an
// exact match ignoring case, then names within a small edit distance. It is
// used for "did you mean" hints, so it only ever returns names, never values.
func Nearest(name string, candidates []string) []string {
	type scored struct {
		name     string
		distance int
	}
	lower := strings.ToLower(name)
	var found []scored
	seen := map[string]bool{}
	for _, c := range candidates {
		if c == name || seen[c] {
			continue
		}
		seen[c] = true
		d := editDistance(lower, strings.ToLower(c))
		limit := max(1, min(len(lower), len(c))/3)
		if d <= limit {
			found = append(found, scored{c, d})
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].distance != found[j].distance {
			return found[i].distance < found[j].distance
		}
		return found[i].name < found[j].name
	})
	out := make([]string, 0, 3)
	for _, f := range found {
		if len(out) == 3 {
			break
		}
		out = append(out, f.name)
	}
	return out
}

// DidYouMean returns "; did you mean X?" (or "X or Y") for the nearest
// candidates, or "" when none is near.
func DidYouMean(name string, candidates []string) string {
	near := Nearest(name, candidates)
	if len(near) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}

// editDistance is the Levenshtein distance between a and b, counted in bytes.
func editDistance(a, b string) int {
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

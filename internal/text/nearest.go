package text

import "strings"

// Nearest is the name nearest to k among names: within 2 edits
// (a transposition is one) for a k at least twice as long as the edits,
// or sharing a prefix of at least 3 characters with it; "" when none is.
func Nearest(k string, names []string) string {
	best, bestDist := "", -1
	for _, name := range names {
		d := editDistance(k, name)
		near := d <= 2 && 2*d <= len(k)
		if !near && min(len(k), len(name)) >= 3 && (strings.HasPrefix(name, k) || strings.HasPrefix(k, name)) {
			near = true
		}
		if near && (bestDist < 0 || d < bestDist) {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of neighbours.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

package plan

import (
	"slices"
	"strings"
)

// keyAliases are names people are likely to try for a key, mostly because other tools (or
// fsbench's own JSON output) spell it that way; edit distance would not find them.
var keyAliases = map[string]string{
	// top level
	"results_dir": "results", "resultsdir": "results", "output": "results", "out": "results",
	"size_bytes": "size", "image_size": "size", "device_size": "size",
	"reps": "repetitions", "repeat": "repetitions", "repeats": "repetitions", "runs": "repetitions",
	"iterations": "repetitions", "count": "repetitions",
	"warm_up": "warmup", "discard_first": "warmup",
	"test": "tests", "suites": "suite",
	"dataset_size_bytes": "dataset_size", "video_size_bytes": "video_size",
	"variants": "variant",
	// [[variant]]
	"filesystem": "fs", "fstype": "fs", "type": "fs", "fs_type": "fs",
	"mount_options": "mount", "mountoptions": "mount", "mount_opts": "mount", "options": "mount",
	"opts": "mount", "o": "mount",
	"mkfs_args": "mkfs", "mkfs_options": "mkfs", "mkfsargs": "mkfs", "mkfs_opts": "mkfs", "args": "mkfs",
}

// suggest returns the candidate the user most likely meant by s, or "" when none is
// close enough or several are equally close (suggesting "ext2" for "ext5" when ext3 and
// ext4 are as close would mislead).
func suggest(s string, candidates []string) string {
	ls := strings.ToLower(s)
	if a, ok := keyAliases[ls]; ok && slices.Contains(candidates, a) {
		return a
	}
	best, bestD, ties := "", -1, 0
	for _, c := range candidates {
		d := editDistance(ls, strings.ToLower(c))
		switch {
		case bestD < 0 || d < bestD:
			best, bestD, ties = c, d, 1
		case d == bestD:
			ties++
		}
	}
	// Allow one edit per three characters, at most three: "mout" → "mount", "repetition" →
	// "repetitions", but not "seed" → "size". Names of three letters or less get no edit:
	// one edit there makes another real name ("zfs" is not a misspelt "xfs").
	limit := min(len(ls)/3, 3)
	if len(ls) < 4 {
		limit = 0
	}
	if best == "" || bestD > limit || ties > 1 {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions, deletions,
// substitutions and transpositions of adjacent characters ("btfrs" → "btrfs") each cost 1.
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

// didYouMean formats the hint part of an "unknown ..." message: `; did you mean "x"?` or "".
func didYouMean(s string, candidates []string) string {
	if m := suggest(s, candidates); m != "" {
		return `; did you mean "` + m + `"?`
	}
	return ""
}

// knownList formats the allowed values, sorted, for the end of an error message.
func knownList(known []string) string {
	k := slices.Clone(known)
	slices.Sort(k)
	return strings.Join(slices.Compact(k), ", ")
}

package aging

import "math/rand/v2"

// The distributions below were measured on a Debian 12 (bookworm) system with 937 packages
// installed: every regular file under /usr and /etc (/usr/local left out: not Debian's), 143,540
// files, and the regular files each package's dpkg list names. Bucket i of a size table holds the
// files of (2^(i-1), 2^i] bytes; bucket 0 the empty files.

// sizeBuckets[i] is the number of files of the size bucket i (0 = empty, 1 = 1 byte, i>1 =
// (2^(i-2), 2^(i-1)] bytes).
var sizeBuckets = []int{7339, 142, 5, 32, 58, 126, 434, 806, 1120, 5046, 8747, 20411, 28731, 21572,
	14678, 12609, 9250, 5717, 3530, 1596, 753, 380, 172, 130, 49, 45, 36, 16, 8, 1, 1}

// depthBuckets[d] is the number of files d directories below the root (/usr/bin/ls: 2).
var depthBuckets = []int{0, 73, 1899, 3751, 31743, 26907, 15820, 17807, 22599, 13797, 4452, 2591, 1557, 409, 90, 23, 2, 0, 12, 8}

// filesBuckets[i] is the number of packages with files in bucket i (0 = none, 1 = one, i>1 =
// (2^(i-2), 2^(i-1)] files).
var filesBuckets = []int{14, 10, 232, 269, 133, 91, 61, 48, 32, 18, 14, 5, 3, 2, 1, 0, 1}

// pick draws an index with probability proportional to w[i].
func pick(r *rand.Rand, w []int) int {
	total := 0
	for _, x := range w {
		total += x
	}
	n := r.IntN(total)
	for i, x := range w {
		if n < x {
			return i
		}
		n -= x
	}
	return len(w) - 1
}

// fromBucket draws a value uniformly within bucket i of a power-of-two table.
func fromBucket(r *rand.Rand, i int) int64 {
	switch i {
	case 0:
		return 0
	case 1:
		return 1
	}
	lo := int64(1) << (i - 2)
	return lo + 1 + r.Int64N(lo)
}

// fileSize draws a file size from the Debian distribution, no larger than limit.
func fileSize(r *rand.Rand, limit int64) int64 {
	for {
		if s := fromBucket(r, pick(r, sizeBuckets)); s <= limit {
			return s
		}
	}
}

// fileDepth draws how many directories below the root a file lies (at least 2: usr/<dir>).
func fileDepth(r *rand.Rand) int { return max(2, pick(r, depthBuckets)) }

// packageFiles draws how many files a package holds (at least one).
func packageFiles(r *rand.Rand) int { return max(1, int(fromBucket(r, pick(r, filesBuckets)))) }

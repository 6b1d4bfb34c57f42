package main

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: every power of two above 2^subBits ns
// is split into 2^subBits equal buckets, so a recorded value is known to within
// 1/128 (< 0.8%) of itself; values below 2^subBits ns are exact.
const subBits = 7

// hist is a log-linear (HDR-style) histogram of latencies in nanoseconds. Its
// memory is bounded by the largest value recorded (a few thousand counters for
// latencies under a second), not by the number of samples. The zero value is
// ready to use; it is not safe for concurrent use (each worker keeps its own and
// they are merged at the end).
type hist struct {
	counts []uint64
	n      uint64
	sum    float64 // ns, for the mean
	min    int64   // ns, exact
	max    int64   // ns, exact
}

// bucketOf maps a value to its bucket: the value itself below 2^(subBits+1),
// then shift<<subBits + v>>shift, where v>>shift keeps subBits+1 significant bits.
func bucketOf(v uint64) int {
	shift := bits.Len64(v) - subBits - 1
	if shift < 0 {
		shift = 0
	}
	return shift<<subBits + int(v>>uint(shift))
}

// bucketRange is the inverse of bucketOf: the lowest value of bucket i and the
// bucket's width.
func bucketRange(i int) (low, width uint64) {
	if i < 2<<subBits {
		return uint64(i), 1
	}
	shift := i>>subBits - 1
	sub := uint64(i - shift<<subBits)
	return sub << uint(shift), 1 << uint(shift)
}

// record adds one latency; a negative one counts as zero.
func (h *hist) record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	i := bucketOf(uint64(v))
	if i >= len(h.counts) {
		// Grow in whole powers of two, so that a run's steady state allocates
		// only a few times.
		grown := make([]uint64, (i>>subBits+1)<<subBits)
		copy(grown, h.counts)
		h.counts = grown
	}
	h.counts[i]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// merge adds o's samples to h.
func (h *hist) merge(o *hist) {
	if o.n == 0 {
		return
	}
	if len(o.counts) > len(h.counts) {
		grown := make([]uint64, len(o.counts))
		copy(grown, h.counts)
		h.counts = grown
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// quantile is the smallest recorded value v such that at least q of the samples
// are ≤ v, reported as the highest value of v's bucket (never above the exact
// maximum): it can overstate by less than 1/128, never understate. 0 when empty.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	if rank >= h.n {
		return time.Duration(h.max)
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			low, width := bucketRange(i)
			v := int64(low + width - 1)
			if v > h.max {
				v = h.max
			}
			if v < h.min {
				v = h.min
			}
			return time.Duration(v)
		}
	}
	return time.Duration(h.max) // not reached: the counts add up to n
}

// mean is the exact mean of the recorded values (0 when empty).
func (h *hist) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

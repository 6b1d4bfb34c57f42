package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketRangeInvertsBucketOf(t *testing.T) {
	prev := -1
	check := func(v uint64) {
		t.Helper()
		i := bucketOf(v)
		low, width := bucketRange(i)
		if v < low || v-low >= width {
			t.Fatalf("value %d: bucket %d is [%d, %d)", v, i, low, low+width)
		}
		if v >= 2<<subBits && float64(width)/float64(low) > 1.0/(1<<subBits) {
			t.Fatalf("value %d: bucket %d of width %d is wider than 1/%d of %d", v, i, width, 1<<subBits, low)
		}
		if i < prev {
			t.Fatalf("value %d: bucket %d after bucket %d: not monotonic", v, i, prev)
		}
		prev = i
	}
	for v := uint64(0); v < 1<<16; v++ {
		check(v)
	}
	for v := uint64(1 << 16); v < 1<<62; v += v/97 + 1 {
		check(v)
	}
	check(1<<63 - 1)
	// Neighbouring buckets leave no gap.
	for i := 0; i < bucketOf(1<<40); i++ {
		low, width := bucketRange(i)
		if next, _ := bucketRange(i + 1); next != low+width {
			t.Fatalf("bucket %d ends at %d, bucket %d starts at %d", i, low+width, i+1, next)
		}
	}
}

func TestHistEmptyAndSingle(t *testing.T) {
	var h hist
	if h.quantile(0.5) != 0 || h.mean() != 0 || h.n != 0 {
		t.Fatalf("empty histogram: p50 %v mean %v n %d", h.quantile(0.5), h.mean(), h.n)
	}
	h.record(1234567 * time.Nanosecond)
	for _, q := range []float64{0, 0.5, 0.99, 0.999, 1} {
		if got := h.quantile(q); got != 1234567 {
			t.Errorf("one sample of 1234567ns: quantile(%v) = %d", q, got)
		}
	}
	h.record(-time.Second) // a clock step backwards counts as zero
	if h.min != 0 || h.quantile(0.5) != 0 {
		t.Errorf("after a negative sample: min %d p50 %v, want 0", h.min, h.quantile(0.5))
	}
}

// TestHistQuantiles compares the histogram with exact order statistics of the
// same samples: a quantile may overstate by under 1/128, never understate.
func TestHistQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		gen  func() time.Duration
	}{
		{"uniform 0-1000ns", func() time.Duration { return time.Duration(rng.IntN(1000)) }},
		{"lognormal around 2ms", func() time.Duration {
			return time.Duration(float64(2*time.Millisecond) * (0.2 + rng.ExpFloat64()))
		}},
		{"bimodal with a long tail", func() time.Duration {
			if rng.IntN(1000) == 0 {
				return time.Duration(rng.Int64N(int64(5 * time.Second)))
			}
			return 300*time.Microsecond + time.Duration(rng.IntN(200000))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h, a, b hist
			samples := make([]int64, 200000)
			var sum float64
			for i := range samples {
				d := tc.gen()
				samples[i] = int64(d)
				sum += float64(d)
				h.record(d)
				if i%3 == 0 {
					a.record(d)
				} else {
					b.record(d)
				}
			}
			a.merge(&b)
			slices.Sort(samples)
			for _, q := range []float64{0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
				rank := int(math.Ceil(float64(len(samples)) * q))
				exact := samples[max(rank, 1)-1]
				got := int64(h.quantile(q))
				if got < exact || float64(got-exact) > float64(exact)/(1<<subBits)+1 {
					t.Errorf("quantile(%v) = %d, exact %d", q, got, exact)
				}
				if merged := int64(a.quantile(q)); merged != got {
					t.Errorf("merged histogram: quantile(%v) = %d, want %d", q, merged, got)
				}
			}
			if h.max != samples[len(samples)-1] || h.min != samples[0] {
				t.Errorf("min/max %d/%d, want %d/%d", h.min, h.max, samples[0], samples[len(samples)-1])
			}
			if want := time.Duration(sum / float64(len(samples))); h.mean() != want || a.mean() != want {
				t.Errorf("mean %v (merged %v), want %v", h.mean(), a.mean(), want)
			}
			if h.n != uint64(len(samples)) || a.n != h.n {
				t.Errorf("n %d (merged %d), want %d", h.n, a.n, len(samples))
			}
		})
	}
}

package load

import (
	"math/bits"
	"time"
)

// Hist is a log-linear latency histogram: exact below 128 ns, then 64
// buckets per power of two (under 1.6% error), up to about 18 minutes.
// The zero value is empty and ready.
type Hist struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const histBuckets = 128 + 40*64

func bucketOf(d time.Duration) int {
	v := uint64(max(d, 0))
	if v < 128 {
		return int(v)
	}
	shift := bits.Len64(v) - 7
	i := 128 + (shift-1)*64 + int(v>>shift) - 64
	return min(i, histBuckets-1)
}

// bucketValue is the middle of bucket i.
func bucketValue(i int) time.Duration {
	if i < 128 {
		return time.Duration(i)
	}
	shift := (i-128)/64 + 1
	m := uint64((i-128)%64 + 64)
	lo := m << shift
	return time.Duration(lo + (uint64(1)<<shift)/2)
}

// Add records one latency.
func (h *Hist) Add(d time.Duration) {
	h.counts[bucketOf(d)]++
	h.n++
	h.max = max(h.max, d)
}

// Merge adds o's records to h.
func (h *Hist) Merge(o *Hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Count is the number of records.
func (h *Hist) Count() uint64 { return h.n }

// Max is the largest record.
func (h *Hist) Max() time.Duration { return h.max }

// Quantile returns the latency at quantile q (0..1), 0 when empty.
func (h *Hist) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketValue(i), h.max)
		}
	}
	return h.max
}

package httpgc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// secondsSeries returns a series of size samples holding one per second from 1s to
// count s, each waiting its second.
func secondsSeries(size, count int) *series {
	s := &series{buf: make([]sample, size)}
	for i := 1; i <= count; i++ {
		s.add(sample{at: time.Duration(i) * time.Second, waiting: int32(i)})
	}
	return s
}

// A series holds one sample per add, up to its size, oldest first.
func TestASeriesHoldsTheLastSamplesOldestFirst(t *testing.T) {
	for count, want := range map[int][]int{
		0: {},
		1: {1},
		2: {1, 2},
		3: {1, 2, 3},
		4: {1, 2, 3, 4},
		5: {2, 3, 4, 5},
		9: {6, 7, 8, 9},
	} {
		assert.Equal(t, want, secondsSeries(4, count).waiting(), "%d samples", count)
	}
}

// before finds the newest sample taken at or before a time. Without one,
// a full ring gives its oldest, since that goes back as far as history
// does, and a ring not yet full gives none.
func TestBeforeFindsTheNewestSampleAtOrBeforeATime(t *testing.T) {
	for _, c := range []struct {
		name        string
		size, count int
		at          time.Duration
		want        int32 // the sample's second; 0 for none
	}{
		{"empty", 4, 0, time.Hour, 0},
		{"after the newest", 4, 3, time.Hour, 3},
		{"at the newest", 4, 3, 3 * time.Second, 3},
		{"between two", 4, 3, 2500 * time.Millisecond, 2},
		{"at the oldest, not full", 4, 3, time.Second, 1},
		{"before the oldest, not full", 4, 3, time.Second / 2, 0},
		{"at the oldest, full", 4, 6, 3 * time.Second, 3},
		{"before the oldest, full", 4, 6, time.Second, 3},
		{"one sample, before it", 1, 1, 0, 1},
	} {
		x, ok := secondsSeries(c.size, c.count).before(c.at)
		assert.Equal(t, c.want != 0, ok, c.name)
		assert.Equal(t, c.want, x.waiting, c.name)
	}
}

package adapt

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelectKthAgreesWithSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		n := 1 + rng.IntN(300)
		spread := 1 + rng.IntN(1+round%50) // many equal values, or few
		s := make([]int, n)
		for i := range s {
			s[i] = rng.IntN(spread)
		}
		sorted := slices.Sorted(slices.Values(s))
		k := rng.IntN(n)
		c := slices.Clone(s)
		require.Equal(t, sorted[k], selectKth(c, k), "round %d: k %d of %v", round, k, s)
		slices.Sort(c)
		require.Equal(t, sorted, c, "round %d: reordered, not changed", round)
	}
}

func TestAWindowKeepsAnEvenSampleOfItsWholeSpan(t *testing.T) {
	var w window
	ms := int64(time.Millisecond)
	for i := range 1000 {
		sig := Measure
		if i%10 == 0 {
			sig = Overload
		}
		w.add(int64(i)*ms, time.Duration(i), i%7, 6, sig, i%4 == 0)
	}
	assert.Equal(t, 1000, w.all.seen)
	require.LessOrEqual(t, len(w.all.d), windowCap)
	assert.Equal(t, 8, w.all.stride, "1000 samples kept one in 8")
	for i, r := range w.all.d {
		assert.Equal(t, time.Duration(i*w.all.stride), r, "kept %d", i)
	}
	assert.Equal(t, 142, w.full.seen, "those that started at a full limit, apart")
	assert.Equal(t, 100, w.over)
	assert.Equal(t, 250, w.held)
	assert.InDelta(t, 3, w.meanRunning(), 0.01)
	assert.InDelta(t, float64(500), float64(w.all.percentile(0.5)), 8, "the median of 0..999")
	assert.Zero(t, w.start)
	assert.False(t, w.due(999*ms, time.Second, 1), "a second not yet up")
	assert.False(t, w.due(1000*ms, time.Second, 1001), "too few samples")
	assert.True(t, w.due(1000*ms, time.Second, 1000))
	w.reset()
	w.add(0, 5, 1, 2, Measure, false)
	assert.Equal(t, []time.Duration{5}, w.all.d)
	assert.Equal(t, 1, w.all.stride)
	assert.Zero(t, w.full.seen+w.over+w.held)
}

func TestLevelsTakeTheLeastSettledRunTimeAsTheBaseline(t *testing.T) {
	var ls levels
	ls.add(8, 80, 0.25)
	assert.Equal(t, 80.0, ls.baseline(100), "with no settled level, the least of all")
	ls.add(9, 100, 0.25)
	ls.add(9, 100, 0.25)
	ls.add(9, 100, 0.25)
	assert.Equal(t, 100.0, ls.baseline(100), "one fast window does not set it")
	ls.add(8, 100, 0.25)
	ls.add(8, 100, 0.25)
	assert.InDelta(t, 93.3, ls.baseline(100), 0.1, "a plain mean of a level's first windows")
	for range 100 {
		ls.add(7, 120, 0.25)
	}
	assert.InDelta(t, 120.0, ls.baseline(100), 0.01, "levels not seen for the age are dropped")
	for n := range 20 {
		ls.add(20+n, float64(50+n), 1)
	}
	used := 0
	for _, l := range ls.e {
		if l.n != 0 {
			used++
		}
	}
	assert.Equal(t, levelCap, used)
	ls.reset()
	assert.Zero(t, ls.baseline(100))
}

func TestLevelsKeepABaselinePushedOutByLevelsFarSlower(t *testing.T) {
	var ls levels
	for range settled {
		ls.add(4, 100, 0.25)
	}
	// The limit runs at many levels above the capacity, all slow.
	for n := range 3 * levelCap {
		ls.add(20+n%(levelCap+2), 300, 1)
	}
	assert.Equal(t, 100.0, ls.baseline(100), "the settled level pushed out is kept")
	for n := range 2 * levelCap {
		ls.add(40+n%(levelCap+2), 110, 1)
	}
	assert.Equal(t, 110.0, ls.baseline(100), "levels in use within keptMargin of it win: the kept one is biased low")
	for range 100 {
		ls.add(60, 300, 1)
	}
	assert.Equal(t, 300.0, ls.baseline(100), "and it ages as the others do")
}

// The kept level is the fastest settled level pushed out. Once it is
// levelCap × settled windows old, any settled level pushed out takes its
// place, even a slower one.
func TestLevelsKeepTheFastestLevelPushedOutUntilItIsOld(t *testing.T) {
	for _, c := range []struct {
		r    float64 // the run time of level 2
		late int     // windows past levelCap × settled when it is pushed out
		want float64
	}{{200, 0, 100}, {200, 1, 200}, {80, 0, 80}} {
		var ls levels
		for range settled {
			ls.add(1, 100, 0.25)
		}
		for range settled {
			ls.add(2, c.r, 0.25)
		}
		for n := 3; n <= levelCap+1; n++ {
			ls.add(n, 300, 0.25) // the last one pushes out level 1
		}
		require.Equal(t, 1, ls.kept.n)
		for i := 0; ls.now < settled+levelCap*settled-1+c.late; i++ {
			ls.add(3+i%(levelCap-1), 300, 0.25)
		}
		ls.add(levelCap+2, 300, 0.25) // pushes out level 2
		assert.Equal(t, c.want, ls.baseline(100), "level 2 at %v, pushed out %d windows after level 1 was last seen", c.r, ls.now-settled)
		assert.Equal(t, 300.0, ls.baseline(ls.now-ls.kept.last), "the kept level ages as the others do")
	}
}

// A level of one window, pushed out, is not kept, however fast it ran.
func TestLevelsDoNotKeepALevelNotSettled(t *testing.T) {
	var ls levels
	ls.add(1, 50, 0.25)
	for n := 2; n <= levelCap+1; n++ {
		ls.add(n, 100, 0.25)
	}
	assert.Equal(t, 100.0, ls.baseline(100))
}

// The kept level stands for the baseline only if it is faster than the
// levels in use by over keptMargin.
func TestLevelsPreferTheLevelsInUseWithinKeptMargin(t *testing.T) {
	for _, c := range []struct{ inUse, want float64 }{{100, 100}, {101, 80}} {
		var ls levels
		for range settled {
			ls.add(1, 80, 0.25)
		}
		for n := 2; n <= levelCap+1; n++ {
			ls.add(n, c.inUse, 0.25) // the last one pushes out level 1
		}
		assert.Equal(t, c.want, ls.baseline(100), "levels in use at %v", c.inUse)
	}
}

package adapt

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// After a window with one voter, overload is one group's only while
// another group gives samples too: a group that gave none this window
// does not count.
func TestOverloadIsOneGroupsWhileAnotherGivesSamples(t *testing.T) {
	var tl tally
	for range minVote {
		tl.add("x", time.Millisecond, Measure)
	}
	tl.add("y", time.Millisecond, Measure) // too few to vote
	require.True(t, tl.close(0.1), "one voter: shared")
	tl.add("x", time.Millisecond, Overload)
	assert.False(t, tl.quietNow(), "only x gives samples")
	tl.add("y", time.Millisecond, Measure)
	assert.True(t, tl.quietNow(), "y gives samples too")
}

// The group of the empty key votes as any other, from its first sample.
func TestTheGroupOfTheEmptyKeyVotes(t *testing.T) {
	var tl tally
	for range minVote {
		tl.add("", time.Millisecond, Measure)
	}
	for range minVote {
		tl.add("x", time.Millisecond, Overload)
	}
	assert.False(t, tl.close(0.1), "x is slow, the group of the empty key is not")
}

// Past tallyCap groups giving samples in one window, the samples of the
// groups past it are pooled in the last entry.
func TestATallyPoolsTheGroupsPastItsCap(t *testing.T) {
	var tl tally
	for i := range tallyCap + 4 {
		tl.add(fmt.Sprint("g", i), time.Millisecond, Measure)
	}
	assert.Equal(t, tallyCap, tl.used)
	assert.Equal(t, 5, tl.e[tallyCap-1].seen, "the last group, and the four past it")
}

// A new group past tallyCap takes the entry of the group idle longest.
func TestATallyGivesANewGroupTheEntryIdleLongest(t *testing.T) {
	var tl tally
	window := func(skip ...int) {
		for i := range tallyCap {
			if !slices.Contains(skip, i) {
				tl.add(fmt.Sprint("g", i), time.Millisecond, Measure)
			}
		}
		tl.close(0.1)
	}
	window()
	window(3)
	window(3, 7)
	tl.add("new", time.Millisecond, Measure)
	assert.Equal(t, "new", tl.e[3].key, "g3, idle for two windows")
	assert.Equal(t, "g7", tl.e[7].key)
}

// A group's vote stands for keepVote windows in a row without a sample of
// it. A sample, even too few to vote, starts the count again.
func TestAVoteStandsForKeepVoteWindowsWithoutASample(t *testing.T) {
	var tl tally
	window := func(keys ...string) bool {
		for _, k := range keys {
			for range minVote {
				sig := Measure
				if k == "y" {
					sig = Overload
				}
				tl.add(k, time.Millisecond, sig)
			}
		}
		return tl.close(0.1)
	}
	require.False(t, window("x", "y"), "x well, y slow: y's own")
	for i := range 5 { // as a tenant of long calls, which ends few
		require.False(t, window("y"), "x's vote stands: %d windows without a sample", i+1)
	}
	tl.add("x", time.Millisecond, Measure)
	require.False(t, window("y"))
	for i := range keepVote {
		assert.False(t, window("y"), "x's vote stands: %d windows without a sample", i+1)
	}
	assert.True(t, window("y"), "then y votes alone")
}

// A group is slow if over one of its samples in overShare signals
// overload.
func TestAGroupIsSlowPastOneOverloadInOverShare(t *testing.T) {
	var tl tally
	window := func(bad int) bool {
		for _, k := range []string{"x", "y"} {
			for i := range 2 * overShare {
				sig := Measure
				if i < bad {
					sig = Overload
				}
				tl.add(k, time.Millisecond, sig)
			}
		}
		return tl.close(0.1)
	}
	assert.False(t, window(2), "one in ten: neither is slow")
	assert.False(t, window(2), "nor in the next window")
	assert.True(t, window(3), "both slow: shared")
}

// The groups of no vote yet vote together if they gave minVote samples.
func TestTheGroupsOfNoVoteVoteTogether(t *testing.T) {
	for light, want := range map[int]bool{minVote: false, minVote - 1: true} {
		var tl tally
		for range minVote {
			tl.add("x", time.Millisecond, Overload)
		}
		for i := range light {
			tl.add(fmt.Sprint("light", i), time.Millisecond, Measure)
		}
		assert.Equal(t, want, tl.close(0.1), "x slow, and %d samples of light groups", light)
	}
}

// Overload is shared if more than half the voters are slow, and they gave
// more than half the samples of their votes. The groups of no vote are
// slow if most of their samples are of slow groups.
func TestOverloadIsSharedByMostVotersAndSamples(t *testing.T) {
	vote := func(tl *tally, key string, n int, sig Signal) {
		for range n {
			tl.add(key, time.Millisecond, sig)
		}
	}
	var tl tally
	vote(&tl, "x", 10, Measure)
	vote(&tl, "y", 5, Overload)
	vote(&tl, "z", 5, Overload)
	assert.False(t, tl.close(0.1), "two slow voters of three, but half the samples")

	for lightSlow, want := range map[int]bool{3: false, 4: true} {
		var tl tally
		vote(&tl, "x", 10, Overload)
		for i := range 6 {
			sig := Measure
			if i < lightSlow {
				sig = Overload
			}
			vote(&tl, fmt.Sprint("light", i), 1, sig)
		}
		assert.Equal(t, want, tl.close(0.1), "x slow, and %d of 6 samples of light groups slow", lightSlow)
	}

	// The groups of no vote weigh by their samples, which count in the
	// total and, when they are slow, in the slow samples.
	for _, c := range []struct {
		y         Signal // x is slow
		lightSlow bool
		want      bool
		why       string
	}{
		{Overload, false, false, "two slow voters of three, but a third of the samples"},
		{Measure, true, true, "two slow voters of three, with five sixths of the samples"},
	} {
		var tl tally
		vote(&tl, "x", 5, Overload)
		vote(&tl, "y", 5, c.y)
		sig := Measure
		if c.lightSlow {
			sig = Overload
		}
		for i := range 10 {
			vote(&tl, fmt.Sprint("light", i), 2, sig)
		}
		assert.Equal(t, c.want, tl.close(0.1), c.why)
	}
}

// Until a window is judged, overload is one group's once more than one
// group gave samples. Then it is as the last window with voters judged.
func TestQuietNowFollowsTheLastWindowJudged(t *testing.T) {
	var tl tally
	tl.add("x", time.Millisecond, Overload)
	tl.add("y", time.Millisecond, Overload)
	require.True(t, tl.close(0.1), "too few samples to vote")
	tl.add("x", time.Millisecond, Overload)
	assert.True(t, tl.quietNow(), "no window judged yet, and two groups gave samples")
	for range minVote {
		tl.add("x", time.Millisecond, Overload)
		tl.add("y", time.Millisecond, Overload)
	}
	require.True(t, tl.close(0.1), "both slow")
	tl.add("x", time.Millisecond, Overload)
	tl.add("y", time.Millisecond, Overload)
	assert.False(t, tl.quietNow(), "two voters found the overload shared")
}

// A group whose vote lapsed votes with the groups of no vote again.
func TestAGroupWhoseVoteLapsedVotesWithTheGroupsOfNone(t *testing.T) {
	var tl tally
	add := func(key string, n int, sig Signal) {
		for range n {
			tl.add(key, time.Millisecond, sig)
		}
	}
	add("x", minVote, Measure)
	add("y", minVote, Measure)
	tl.close(0.1)
	for range keepVote + 1 {
		add("y", minVote, Measure)
		tl.close(0.1)
	}
	add("y", minVote, Overload)
	add("x", 3, Measure)
	add("z", 2, Measure)
	assert.False(t, tl.close(0.1), "y slow; x and z, of no vote, gave minVote samples together and are not")
}

// After a group votes, its next vote counts only the samples since. A
// deadline of the vote before does not make it slow, and its baseline is
// the mean of the new samples alone.
func TestAGroupsNextVoteCountsOnlyTheSamplesSinceItsLast(t *testing.T) {
	var tl tally
	add := func(n int, run time.Duration, sig Signal) {
		for range n {
			tl.add("x", run, sig)
		}
	}
	add(minVote-1, 10*time.Millisecond, Measure)
	add(1, 10*time.Millisecond, Overload)
	tl.close(0.2)
	require.True(t, tl.e[0].slow, "one deadline in five")
	require.Zero(t, tl.e[0].base, "a vote with deadlines sets no baseline")
	add(minVote, time.Millisecond, Measure)
	tl.close(0.2)
	assert.Equal(t, minVote, tl.e[0].weight)
	assert.False(t, tl.e[0].slow, "no deadline since")
	assert.InDelta(t, float64(time.Millisecond)*(1+baseDrift), tl.e[0].base, 0.01, "1ms, risen by baseDrift")
}

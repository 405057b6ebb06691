package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newWaiters(n int) []waiter[tk] {
	ws := make([]waiter[tk], n)
	for i := range ws {
		ws[i].owner = &Permits[tk]{owner: &tk{}}
	}
	return ws
}

func TestLineServesWaitersInJoinOrder(t *testing.T) {
	l := newLine[tk](1)
	require.True(t, l.tryAcquire())
	ws := newWaiters(10)
	for i := range ws {
		require.False(t, l.join(&ws[i]))
	}
	for i := range ws {
		w := l.release()
		require.Same(t, &ws[i], w, "permit %d went out of order", i)
		assert.Nil(t, w.line.Load(), "a granted waiter is out of line")
	}
	assert.Nil(t, l.release(), "no waiter left: the permit goes back")
	assert.Zero(t, l.waiting.Load())
	assert.Zero(t, l.held.load())
}

func TestLineNewcomerNeverPassesAWaiter(t *testing.T) {
	l := newLine[tk](1)
	require.True(t, l.tryAcquire())
	ws := newWaiters(2)
	require.False(t, l.join(&ws[0]))
	require.Same(t, &ws[0], l.release())
	require.False(t, l.tryAcquire(), "a newcomer took the waiter's permit")
	require.False(t, l.join(&ws[1]), "a newcomer took the waiter's permit")
	require.Same(t, &ws[1], l.release())
	assert.Nil(t, l.release())
	assert.True(t, l.tryAcquire(), "line empty and a permit free")
}

func TestLineLeavingWaiterPassesTheHead(t *testing.T) {
	l := newLine[tk](1)
	require.True(t, l.tryAcquire())
	ws := newWaiters(3)
	for i := range ws {
		require.False(t, l.join(&ws[i]))
	}
	require.True(t, ws[1].leave())
	require.True(t, ws[0].leave())
	assert.False(t, ws[0].leave(), "left twice")
	require.Same(t, &ws[2], l.release())
	assert.False(t, ws[2].leave(), "a granted waiter is owned by its releaser")
	assert.Nil(t, l.release())
	assert.Zero(t, l.held.load())
}

func TestLineSweepTakesOutTheMatchingWaitersAndKeepsTheOthersInOrder(t *testing.T) {
	l := newLine[tk](1)
	require.True(t, l.tryAcquire())
	ws := newWaiters(5)
	for i := range ws {
		require.False(t, l.join(&ws[i]))
	}
	odd := func(p *Permits[tk]) bool { return p == ws[1].owner || p == ws[3].owner }
	assert.Equal(t, []*tk{ws[1].owner.owner, ws[3].owner.owner}, l.sweep(odd, nil))
	for _, i := range []int{0, 2, 4} {
		require.Same(t, &ws[i], l.release())
	}
	assert.Empty(t, l.sweep(nil, nil))
	assert.Nil(t, l.release())
}

func TestLineRaisedLimitGrantsWaitersInOrderAtOnce(t *testing.T) {
	l := newLine[tk](1)
	require.True(t, l.tryAcquire())
	ws := newWaiters(4)
	for i := range ws {
		require.False(t, l.join(&ws[i]))
	}
	l.setLimit(3)
	granted := appendOwners(l.grant(), nil)
	assert.Equal(t, []*tk{ws[0].owner.owner, ws[1].owner.owner}, granted, "two more fit, in order")
	assert.EqualValues(t, 3, l.held.load())
	assert.EqualValues(t, 2, l.waiting.Load())
}

func TestLineLoweredLimitDrainsBeforeGrantingAgain(t *testing.T) {
	l := newLine[tk](3)
	for range 3 {
		require.True(t, l.tryAcquire())
	}
	l.setLimit(1)
	assert.Nil(t, l.grant(), "nothing is taken back")
	ws := newWaiters(1)
	require.False(t, l.join(&ws[0]))
	assert.Nil(t, l.release(), "3 held: below the new limit only at 0")
	assert.Nil(t, l.release())
	assert.Same(t, &ws[0], l.release(), "the last holder's permit goes on: 1 held again")
	assert.EqualValues(t, 1, l.held.load())
}

func TestLineCountsHoldersWhileUnlimitedSoALimitCoversThem(t *testing.T) {
	l := newLine[tk](Unlimited)
	for range 5 {
		require.True(t, l.tryAcquire())
	}
	l.setLimit(2)
	assert.False(t, l.tryAcquire(), "5 running against a new limit of 2")
	for range 4 {
		assert.Nil(t, l.release())
	}
	assert.True(t, l.tryAcquire(), "below the limit again")
	l.setLimit(Unlimited)
	assert.True(t, l.tryAcquire())
}

func TestSlotsLoweredLimitKeepsTakenSlots(t *testing.T) {
	s := newSlots[int](3)
	for range 3 {
		require.True(t, s.take())
	}
	s.limit.Store(1)
	assert.False(t, s.take())
	s.give()
	s.give()
	assert.False(t, s.take(), "still at the limit")
	s.give()
	assert.True(t, s.take())
}

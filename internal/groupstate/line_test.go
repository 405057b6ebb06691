package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newFIFOLine[T any](limit int) *line[T] {
	l := new(line[T])
	l.init(limit)
	return l
}

// owners returns the tasks of ws.
func owners(ws []*Permits[tk]) []*tk {
	var out []*tk
	for _, w := range ws {
		out = append(out, w.task())
	}
	return out
}

// newWaiters returns the Permits of n tasks, each alone in a group of its
// own. So none waits for another's turn to walk on (see turn.go).
func newWaiters(n int) []*Permits[tk] {
	ws := make([]*Permits[tk], n)
	gl := NewGlobal[tk](Unlimited, Unlimited, false)
	for i := range ws {
		ws[i] = &new(tk).p
		ws[i].group = &Group[tk]{global: gl}
	}
	return ws
}

// fullLine returns a line of limit 1 whose permit is held, with n waiters
// in it.
func fullLine(t *testing.T, n int) (*line[tk], []*Permits[tk]) {
	l := newFIFOLine[tk](1)
	require.True(t, l.tryAcquire())
	ws := newWaiters(n)
	for i := range ws {
		require.False(t, l.join(ws[i], nil))
	}
	return l, ws
}

func TestLineServesWaitersInJoinOrder(t *testing.T) {
	l, ws := fullLine(t, 10)
	for i := range ws {
		w := l.release(nil, 1)
		require.Same(t, ws[i], w, "permit %d went out of order", i)
		assert.Nil(t, w.line.Load(), "a granted waiter is out of line")
	}
	assert.Nil(t, l.release(nil, 1), "no waiter left: the permit goes back")
	assert.Zero(t, l.waiting.Load())
	assert.Zero(t, l.held.load())
}

func TestLineNewcomerNeverPassesAWaiter(t *testing.T) {
	l := newFIFOLine[tk](1)
	require.True(t, l.tryAcquire())
	ws := newWaiters(2)
	require.False(t, l.join(ws[0], nil))
	require.Same(t, ws[0], l.release(nil, 1))
	require.False(t, l.tryAcquire(), "a newcomer took the waiter's permit")
	require.False(t, l.join(ws[1], nil), "a newcomer took the waiter's permit")
	require.Same(t, ws[1], l.release(nil, 1))
	assert.Nil(t, l.release(nil, 1))
	assert.True(t, l.tryAcquire(), "line empty and a permit free")
}

// A joiner may find the permit free, given back after its walk found the
// count full. It takes it and is counted waiting no more: a newcomer after
// it takes the next free permit at once.
func TestLineJoinerThatFindsAPermitFreeTakesIt(t *testing.T) {
	l := newFIFOLine[tk](1)
	w := newWaiters(1)[0]
	require.True(t, l.join(w, nil), "the permit is free and nobody waits")
	assert.Nil(t, w.line.Load(), "a joiner that took the permit is in no line")
	assert.Zero(t, l.waiting.Load(), "a joiner that took the permit is counted waiting")
	require.Nil(t, l.release(w, 1))
	assert.True(t, l.tryAcquire(), "a permit is free and nobody waits")
}

func TestLineLeavingWaiterPassesTheHead(t *testing.T) {
	l, ws := fullLine(t, 3)
	require.True(t, ws[1].leave())
	require.True(t, ws[0].leave())
	assert.False(t, ws[0].leave(), "left twice")
	require.Same(t, ws[2], l.release(nil, 1))
	assert.False(t, ws[2].leave(), "a granted waiter is owned by its releaser")
	assert.Nil(t, l.release(nil, 1))
	assert.Zero(t, l.held.load())
}

func TestLineSweepTakesOutTheMatchingWaitersAndKeepsTheOthersInOrder(t *testing.T) {
	l, ws := fullLine(t, 5)
	odd := func(p *Permits[tk]) bool { return p == ws[1] || p == ws[3] }
	assert.Equal(t, []*tk{ws[1].task(), ws[3].task()}, owners(l.takeOut(nil, odd, nil)))
	for _, i := range []int{0, 2, 4} {
		require.Same(t, ws[i], l.release(nil, 1))
	}
	assert.Empty(t, l.takeOut(nil, nil, nil))
	assert.Nil(t, l.release(nil, 1))
}

func TestLineRaisedLimitGrantsWaitersInOrderAtOnce(t *testing.T) {
	l, ws := fullLine(t, 4)
	l.setLimit(3)
	granted := appendOwners(l.grant(), nil)
	assert.Equal(t, []*tk{ws[0].task(), ws[1].task()}, granted, "two more fit, in order")
	assert.EqualValues(t, 3, l.held.load())
	assert.EqualValues(t, 2, l.waiting.Load())
}

func TestLineLoweredLimitDrainsBeforeGrantingAgain(t *testing.T) {
	l := newFIFOLine[tk](3)
	for range 3 {
		require.True(t, l.tryAcquire())
	}
	l.setLimit(1)
	assert.Nil(t, l.grant(), "nothing is taken back")
	ws := newWaiters(1)
	require.False(t, l.join(ws[0], nil))
	assert.Nil(t, l.release(nil, 1), "3 held: below the new limit only at 0")
	assert.Nil(t, l.release(nil, 1))
	assert.Same(t, ws[0], l.release(nil, 1), "the last holder's permit goes on: 1 held again")
	assert.EqualValues(t, 1, l.held.load())
}

func TestLineCountsHoldersWhileUnlimitedSoALimitCoversThem(t *testing.T) {
	l := newFIFOLine[tk](Unlimited)
	for range 5 {
		require.True(t, l.tryAcquire())
	}
	l.setLimit(2)
	assert.False(t, l.tryAcquire(), "5 running against a new limit of 2")
	for range 4 {
		assert.Nil(t, l.release(nil, 1))
	}
	assert.True(t, l.tryAcquire(), "below the limit again")
	l.setLimit(Unlimited)
	assert.True(t, l.tryAcquire())
}

func TestSlotsLoweredLimitKeepsTakenSlots(t *testing.T) {
	s := new(slots[int])
	s.init(3)
	for range 3 {
		require.True(t, s.tryAcquire())
	}
	s.limit.Store(1)
	assert.False(t, s.tryAcquire())
	s.give()
	s.give()
	assert.False(t, s.tryAcquire(), "still at the limit")
	s.give()
	assert.True(t, s.tryAcquire())
}

func TestLineMakesItsLobbyOnlyOnceATaskWaits(t *testing.T) {
	l := newFIFOLine[tk](1)
	require.True(t, l.tryAcquire())
	l.setLimit(2)
	require.True(t, l.tryAcquire())
	assert.Nil(t, l.grant())
	assert.Nil(t, l.release(nil, 1))
	assert.Nil(t, l.release(nil, 1))
	assert.Nil(t, l.waiters.Load(), "nobody waited, yet the line made its waiters")

	l.setLimit(1)
	require.True(t, l.tryAcquire())
	w := newWaiters(1)[0]
	require.False(t, l.join(w, nil))
	r := l.waiters.Load()
	require.NotNil(t, r, "a task waits without the line's waiters")
	require.Same(t, w, l.release(nil, 1))
	assert.Nil(t, l.release(nil, 1))
	assert.Same(t, r, l.waiters.Load(), "the line keeps its waiters")
}

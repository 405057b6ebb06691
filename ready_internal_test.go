package groupconc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ready queue's protocol, step by step on one goroutine: each step is
// what one goroutine of the executor would do at that point, so the
// interleavings that matter are written out rather than hoped for.

func TestReadyQueueFirstPushStartsOneGoroutine(t *testing.T) {
	var q readyQueue
	a, b := new(task), new(task)
	assert.True(t, q.push(a), "first push onto an empty, free queue starts a goroutine")
	assert.False(t, q.push(b), "a push onto a non-empty queue relies on whoever takes the first")
	assert.True(t, q.arrive(), "the started goroutine takes the role on offer")
	assert.False(t, q.arrive(), "a second goroutine finds the role taken")
	got, more := q.pop()
	assert.Same(t, a, got, "oldest first")
	assert.True(t, more)
	got, more = q.pop()
	assert.Same(t, b, got)
	assert.False(t, more)
	got, _ = q.pop()
	assert.Nil(t, got)
}

// The holder gives the role up and then looks again: a task pushed while it
// held the role (whose Submit saw the role held and started nobody) is seen.
func TestReadyQueueReleaseSeesPushWhileHeld(t *testing.T) {
	var q readyQueue
	a, b := new(task), new(task)
	require.True(t, q.push(a))
	require.True(t, q.arrive())
	got, more := q.pop()
	require.Same(t, a, got)
	require.False(t, more)
	assert.False(t, q.push(b), "the role is held: its holder answers for b")
	assert.True(t, q.release(), "the holder takes the role back for b")
	got, _ = q.pop()
	assert.Same(t, b, got)
	assert.False(t, q.release(), "nothing left: the role is free")
	assert.Zero(t, q.word.Load(), "free, nobody coming")
}

// A goroutine that has finished its task takes the role on offer before the
// goroutine started for it runs; that one then finds nothing to do.
func TestReadyQueueFinishedGoroutineTakesOfferedRole(t *testing.T) {
	var q readyQueue
	a := new(task)
	require.True(t, q.push(a))
	assert.True(t, q.claim(), "the role on offer is taken by a finished goroutine")
	assert.False(t, q.claim(), "held: another finished goroutine ends")
	got, _ := q.pop()
	require.Same(t, a, got)
	require.False(t, q.release())
	assert.False(t, q.arrive(), "the goroutine started for the role arrives to nothing")
	assert.Zero(t, q.word.Load(), "free, nobody coming")
	assert.False(t, q.claim(), "free and empty: nothing to take")
}

// Handing the role on starts a goroutine only when none is coming already.
func TestReadyQueueHandStartsAGoroutineOnlyIfNoneComing(t *testing.T) {
	var q readyQueue
	a, b, c := new(task), new(task), new(task)
	require.True(t, q.push(a))
	require.False(t, q.push(b))
	require.True(t, q.claim()) // the started goroutine is still coming
	got, more := q.pop()
	require.Same(t, a, got)
	require.True(t, more)
	assert.False(t, q.hand(), "one goroutine already coming")
	require.True(t, q.arrive(), "it takes the role handed on")
	got, more = q.pop()
	require.Same(t, b, got)
	require.False(t, more)
	require.False(t, q.push(c))
	assert.True(t, q.hand(), "nobody coming: start one")
	require.True(t, q.arrive())
	got, _ = q.pop()
	assert.Same(t, c, got)
	assert.False(t, q.release())
	assert.Zero(t, q.word.Load())
}

package groupconc_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// ShutdownGroup and EvictGroup of a grandparent reach every task of its
// subtree: a running task's context ends with the cause, a waiting task
// ends CANCELLED, a waiting Do and a blocked caller return the cause, and
// another tenant is untouched. Later submissions are accepted.
func TestStoppingAGrandparentStopsItsWholeSubtree(t *testing.T) {
	for _, c := range []struct {
		name  string
		stop  func(*groupconc.GroupExecutor, string)
		cause error
	}{
		{"ShutdownGroup", (*groupconc.GroupExecutor).ShutdownGroup, groupconc.ErrGroupShutdown},
		{"EvictGroup", (*groupconc.GroupExecutor).EvictGroup, groupconc.ErrGroupEvicted},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) { stopGrandparent(t, mode, c.stop, c.cause) })
			})
		})
	}
}

func stopGrandparent(t *testing.T, mode groupconc.IsolationMode, stop func(*groupconc.GroupExecutor, string), cause error) {
	e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(1).
		PerGroupMaxConcurrency(map[string]int{"org": 5}).PerGroupQueueThreshold(map[string]int{"org/acme": 1}))
	causes := make(chan error, 1)
	running := submit(t, context.Background(), e, "org/acme/u1", "running", func(ctx context.Context) (int, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return 0, ctx.Err()
	})
	other := newGatedTask(t, 1)
	ho := submitGated(t, e, "other/u1", "", other, groupconc.SubmitOptions{})
	waiting := submit(t, context.Background(), e, "org/acme/u2", "waiting", succeed)
	own := newGatedTask(t, 2)
	hOwn := submitGated(t, e, "org", "", own, groupconc.SubmitOptions{})
	synctest.Wait()
	require.False(t, waiting.IsDone())
	errs := make(chan error, 1)
	go func() { // blocked: acme's queue is full
		_, err := groupconc.SubmitWith(context.Background(), e, "org/acme/u3", "blocked", succeed, groupconc.SubmitOptions{Block: true})
		errs <- err
	}()
	synctest.Wait()
	require.Equal(t, 1, groupStats(t, e, "org").Blocked)

	stop(e, "org")
	synctest.Wait()
	assert.ErrorIs(t, <-causes, cause, "the running task's context")
	r := doneResult(t, waiting)
	assert.Equal(t, groupconc.StatusCancelled, r.Status)
	assert.ErrorIs(t, <-errs, cause, "the blocked caller")
	assert.False(t, ho.IsDone(), "another tenant is untouched")
	r = running.Wait()
	assert.Equal(t, groupconc.StatusCancelled, r.Status)
	own.Release()
	assert.Equal(t, groupconc.StatusSuccess, hOwn.Wait().Status, "org's own task ignores its context")

	h := submit(t, context.Background(), e, "org/acme/u2", "later", succeed)
	assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "later submissions are accepted")
	if errors.Is(cause, groupconc.ErrGroupEvicted) {
		x, ok := e.ExplainGroup("org/acme/u2")
		require.True(t, ok)
		assert.Equal(t, []string{"org/acme", "org"}, x.Ancestors, "made again with its parents")
	}
	other.Release()
	quiesce(t, e, ho)
}

// A Do waiting in a grandparent's subtree returns the cause when the
// grandparent is shut down or evicted.
func TestStoppingAGrandparentEndsADoWaitingBelowIt(t *testing.T) {
	for name, c := range map[string]struct {
		stop  func(*groupconc.GroupExecutor, string)
		cause error
	}{
		"ShutdownGroup": {(*groupconc.GroupExecutor).ShutdownGroup, groupconc.ErrGroupShutdown},
		"EvictGroup":    {(*groupconc.GroupExecutor).EvictGroup, groupconc.ErrGroupEvicted},
	} {
		t.Run(name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) {
					e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").PerGroupMaxConcurrency(map[string]int{"org/acme": 1}))
					k := newGatedTask(t, 0)
					h := submitGated(t, e, "org/acme/u1", "", k, groupconc.SubmitOptions{})
					synctest.Wait()
					var ran bool
					errs := make(chan error, 1)
					go func() {
						_, err := groupconc.Do(context.Background(), e, "org/acme/u2", func(context.Context) (int, error) { ran = true; return 0, nil }, groupconc.SubmitOptions{})
						errs <- err
					}()
					synctest.Wait()
					assert.Equal(t, 1, groupStats(t, e, "org").Waiting)
					c.stop(e, "org")
					assert.ErrorIs(t, <-errs, c.cause)
					assert.False(t, ran)
					k.Release()
					quiesce(t, e, h)
				})
			})
		})
	}
}

// A parent is remembered while a paused child is, though it has no task
// of its own, and forgotten once the child is.
func TestAParentIsRememberedWhileAPausedChildIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().ParentSeparator("/").IdleGroupTTL(time.Minute))
		for _, key := range []string{"acme/u1", "acme/u2"} {
			_, err := groupconc.Do(context.Background(), e, key, succeed, groupconc.SubmitOptions{})
			require.NoError(t, err)
		}
		on := true
		require.NoError(t, e.SetGroupOverride("acme/u1", groupconc.GroupOverride{Paused: &on}))
		time.Sleep(5 * time.Minute) // fake clock
		e.Stats()
		_, ok := e.GroupStats("acme/u2")
		require.False(t, ok, "an idle child is forgotten")
		_, ok = e.GroupStats("acme")
		assert.True(t, ok, "a paused child keeps its parent")

		require.NoError(t, e.SetGroupOverride("acme/u1", groupconc.GroupOverride{}))
		for range 2 {
			time.Sleep(5 * time.Minute) // fake clock
			e.Stats()
		}
		_, ok = e.GroupStats("acme")
		assert.False(t, ok, "forgotten once every child is")
		assert.Zero(t, e.Stats().Groups)
	})
}

// A parent shut down keeps its limit, held by a task that ignores its
// context, so a child's new task waits. Evicted, it is made again: a
// child's new task starts, and the old task gives back the old parent's
// permit, never the new one's.
func TestAParentStoppedUnderAStubbornTask(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
				PerGroupMaxConcurrency(map[string]int{"acme": 1}))
			old := newGatedTask(t, 0)
			ho := submitGated(t, e, "acme/u1", "", old, groupconc.SubmitOptions{})
			synctest.Wait()
			e.ShutdownGroup("acme")
			k := newGatedTask(t, 0)
			hk := submitGated(t, e, "acme/u1", "", k, groupconc.SubmitOptions{})
			synctest.Wait()
			assert.False(t, k.started.Load(), "ShutdownGroup keeps the limit: the stubborn task holds it")
			st := groupStats(t, e, "acme")
			assert.Equal(t, [2]int{1, 1}, [2]int{st.Running, st.Waiting})
			hk.Cancel()
			e.EvictGroup("acme")
			n := newGatedTask(t, 0)
			hn := submitGated(t, e, "acme/u2", "", n, groupconc.SubmitOptions{})
			synctest.Wait()
			assert.True(t, n.started.Load(), "new groups after EvictGroup")
			st = groupStats(t, e, "acme")
			assert.Equal(t, [2]int{1, 0}, [2]int{st.Running, st.Waiting})
			n2 := submit(t, context.Background(), e, "acme/u1", "n2", succeed)
			synctest.Wait()
			assert.False(t, n2.IsDone(), "acme's new limit of 1 held by u2's task")
			old.Release()
			synctest.Wait()
			assert.False(t, n2.IsDone(), "the old task released into the old acme")
			n.Release()
			quiesce(t, e, ho, hk, hn, n2)
		})
	})
}

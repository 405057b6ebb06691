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

func TestBlockedCallersAreServedByPriorityThenArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, ks, hs := fullGroup(t, groupconc.IsolationOff, nil)
		order := make(chan string, 3)
		fn := func(id string) groupconc.Task[int] {
			return func(context.Context) (int, error) { order <- id; return 1, nil }
		}
		low := submitBlocking(t.Context(), e, "a", "low", fn("low"), groupconc.SubmitOptions{Priority: groupconc.PriorityLow})
		synctest.Wait()
		n1 := submitBlocking(t.Context(), e, "a", "n1", fn("n1"), groupconc.SubmitOptions{})
		synctest.Wait()
		high := submitBlocking(t.Context(), e, "a", "high", fn("high"), groupconc.SubmitOptions{Priority: groupconc.PriorityHigh})
		synctest.Wait()
		ks[0].Release()
		synctest.Wait()
		assert.True(t, high.returned())
		assert.False(t, n1.returned())
		assert.False(t, low.returned())
		ks[1].Release()
		synctest.Wait()
		for _, c := range []*blocked{high, n1, low} {
			<-c.done
			c.h.Wait()
		}
		assert.Equal(t, []string{"high", "n1", "low"}, []string{<-order, <-order, <-order})
		quiesce(t, e, hs...)
	})
}

func TestNothingBargesPastABlockedCaller(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{})
			synctest.Wait()
			ks[0].Release() // frees a slot: it is c's
			h := submit(t, t.Context(), e, "a", "d", succeed)
			synctest.Wait()
			requireRejected(t, h, "group")
			require.True(t, c.returned())
			require.NoError(t, c.err)
			ks[1].Release()
			quiesce(t, e, append(hs, c.h)...)
		})
	})
}

func TestBlockingCallerWaitsForTheGlobalQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().GlobalMaxInFlight(1).GlobalQueueThreshold(1))
		ks := []*gatedTask{newGatedTask(t, 1), newGatedTask(t, 2)}
		h0 := submit(t, t.Context(), e, "a", "0", ks[0].Fn)
		h1 := submit(t, t.Context(), e, "b", "1", ks[1].Fn)
		synctest.Wait()
		c := submitBlocking(t.Context(), e, "c", "c", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		require.False(t, c.returned())
		gs, _ := e.GroupStats("c")
		assert.Equal(t, 1, gs.Blocked)
		ks[0].Release()
		synctest.Wait()
		require.True(t, c.returned())
		ks[1].Release()
		quiesce(t, e, h0, h1, c.h)
	})
}

func TestCallerInsideATaskNeverBlocks(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			inner := make(chan *groupconc.TaskHandle[int], 1)
			outer := submit(t, t.Context(), e, "b", "outer", func(ctx context.Context) (int, error) {
				h, err := groupconc.SubmitWith(context.WithValue(ctx, ctxKey{}, 1), e, "a", "inner", succeed, groupconc.SubmitOptions{Block: true})
				inner <- h
				return 0, err
			})
			synctest.Wait()
			require.Equal(t, groupconc.StatusSuccess, doneResult(t, outer).Status)
			requireRejected(t, <-inner, "group")
			ks[0].Release()
			ks[1].Release()
			quiesce(t, e, hs...)
		})
	})
}

func TestUnlimitedQueueNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		k := newGatedTask(t, 1)
		h0 := submit(t, t.Context(), e, "a", "0", k.Fn)
		var hs []*groupconc.TaskHandle[int]
		for i := range 100 {
			h, err := groupconc.SubmitWith(t.Context(), e, "a", string(rune('a'+i%26))+"x", succeed, groupconc.SubmitOptions{Block: true})
			require.NoError(t, err)
			hs = append(hs, h)
		}
		k.Release()
		quiesce(t, e, append(hs, h0)...)
	})
}

func TestExecuteAllWithReportsTasksNotSubmittedWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, ks, hs := fullGroup(t, groupconc.IsolationOff, nil)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		tasks := []groupconc.GroupTask[int]{
			{GroupKey: "b", TaskID: "x", Task: succeed},
			{GroupKey: "a", TaskID: "y", Task: succeed},
			{GroupKey: "b", TaskID: "z", Task: succeed},
		}
		rs, err := groupconc.ExecuteAllWith(ctx, e, tasks, groupconc.SubmitOptions{Block: true})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Len(t, rs, 3)
		assert.Equal(t, groupconc.StatusSuccess, rs[0].Status)
		for _, r := range rs[1:] {
			assert.Equal(t, groupconc.StatusCancelled, r.Status)
			assert.True(t, errors.Is(r.Err, context.DeadlineExceeded), "Err %v", r.Err)
		}
		assert.Equal(t, uint64(3), e.Stats().Submitted)
		ks[0].Release()
		ks[1].Release()
		quiesce(t, e, hs...)
	})
}

func TestBlockingWithThresholdZeroWaitsUntilTheTaskCanStart(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultQueueThresholdPerGroup(0))
			k := newGatedTask(t, 1)
			h := submit(t, t.Context(), e, "a", "run", k.Fn)
			synctest.Wait()
			var log startLog
			c1 := submitBlocking(t.Context(), e, "a", "c1", log.task("c1"), groupconc.SubmitOptions{})
			synctest.Wait()
			c2 := submitBlocking(t.Context(), e, "a", "c2", log.task("c2"), groupconc.SubmitOptions{})
			synctest.Wait()
			require.False(t, c1.returned())
			assert.Equal(t, 2, e.Stats().Blocked)
			k.Release()
			synctest.Wait()
			require.True(t, c1.returned())
			require.True(t, c2.returned())
			require.NoError(t, c1.err)
			require.NoError(t, c2.err)
			quiesce(t, e, h, c1.h, c2.h)
			assert.Equal(t, []string{"c1", "c2"}, log.order())
		})
	})
}

func TestBlockingWithGlobalThresholdZeroWaitsForAGlobalPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().GlobalMaxInFlight(1).GlobalQueueThreshold(0))
		k := newGatedTask(t, 1)
		h := submit(t, t.Context(), e, "a", "run", k.Fn)
		c := submitBlocking(t.Context(), e, "b", "c", succeed, groupconc.SubmitOptions{MaxWait: time.Hour})
		synctest.Wait()
		require.False(t, c.returned())
		k.Release()
		synctest.Wait()
		require.True(t, c.returned())
		require.NoError(t, c.err)
		assert.Equal(t, groupconc.StatusSuccess, c.h.Wait().Status)
		quiesce(t, e, h)
	})
}

func TestExecuteAllWithGoesOnWhenAWaitingTasksGroupStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, ks, hs := fullGroup(t, groupconc.IsolationOff, nil)
		tasks := []groupconc.GroupTask[int]{
			{GroupKey: "a", TaskID: "x", Task: succeed},
			{GroupKey: "b", TaskID: "y", Task: succeed},
		}
		var rs []groupconc.GroupResult[int]
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			rs, err = groupconc.ExecuteAllWith(t.Context(), e, tasks, groupconc.SubmitOptions{Block: true})
		}()
		synctest.Wait()
		e.ShutdownGroup("a")
		<-done
		require.NoError(t, err)
		assert.Equal(t, groupconc.StatusCancelled, rs[0].Status)
		assert.ErrorIs(t, rs[0].Err, groupconc.ErrGroupShutdown)
		assert.Equal(t, groupconc.StatusSuccess, rs[1].Status)
		ks[0].Release()
		ks[1].Release()
		quiesce(t, e, hs...)
	})
}

func TestAListenerMayCloseTheExecutorAsABlockedTaskIsAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e *groupconc.GroupExecutor
		closer := groupconc.ListenerFuncs{Submitted: func(_, id string) {
			if id == "c" {
				_ = e.Close() // must not wait for this very caller
			}
		}}
		var ks []*gatedTask
		var hs []*groupconc.TaskHandle[int]
		e, ks, hs = fullGroup(t, groupconc.IsolationOff, builder().TaskLifecycleListener(closer))
		c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		ks[0].Release()
		synctest.Wait()
		require.True(t, c.returned())
		require.NoError(t, c.err)
		assert.Equal(t, groupconc.StatusCancelled, c.h.Wait().Status)
		ks[1].Release()
		for _, h := range hs {
			h.Wait()
		}
	})
}

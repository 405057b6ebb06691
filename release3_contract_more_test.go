package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestBlockWithADoneContextIsAcceptedAsBySubmitWhenThereIsRoom(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultQueueThresholdPerGroup(1))
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			h, err := groupconc.SubmitWith(ctx, e, "a", "x", succeed, groupconc.SubmitOptions{Block: true})
			require.NoError(t, err, "a task that can start is accepted exactly as by Submit")
			require.NotNil(t, h)
			assert.Equal(t, groupconc.StatusCancelled, h.Wait().Status)
			quiesce(t, e)
		})
	})
}

func TestBlockWithADoneContextOnAFullQueueSubmitsNothing(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			h, err := groupconc.SubmitWith(ctx, e, "a", "x", succeed, groupconc.SubmitOptions{Block: true})
			assert.Nil(t, h)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, uint64(2), e.Stats().Submitted)
			ks[0].Release()
			ks[1].Release()
			quiesce(t, e, hs...)
		})
	})
}

func TestACallerBlockedOnTheGlobalQueueEndsWhenItsGroupStops(t *testing.T) {
	for _, stop := range []struct {
		name string
		do   func(*groupconc.GroupExecutor, string)
		err  error
	}{
		{"shutdown", (*groupconc.GroupExecutor).ShutdownGroup, groupconc.ErrGroupShutdown},
		{"evict", (*groupconc.GroupExecutor).EvictGroup, groupconc.ErrGroupEvicted},
	} {
		t.Run(stop.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().GlobalMaxInFlight(1).GlobalQueueThreshold(1))
				k := newGatedTask(t, 0)
				run := submit(t, t.Context(), e, "a", "run", k.Fn)
				w := submit(t, t.Context(), e, "a", "w", succeed)
				synctest.Wait()
				c := submitBlocking(t.Context(), e, "b", "c", succeed, groupconc.SubmitOptions{})
				synctest.Wait()
				require.False(t, c.returned())
				gs, ok := e.GroupStats("b")
				require.True(t, ok)
				assert.Equal(t, 1, gs.Blocked)
				ga, _ := e.GroupStats("a")
				assert.Equal(t, 0, ga.Blocked)
				stop.do(e, "b")
				synctest.Wait()
				require.True(t, c.returned())
				assert.ErrorIs(t, c.err, stop.err)
				assert.False(t, w.IsDone(), "another group's waiting task was touched")
				k.Release()
				quiesce(t, e, run, w)
			})
		})
	}
}

func TestACallerInsideATaskOfAnotherExecutorBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, ks, hs := fullGroup(t, groupconc.IsolationOff, nil)
		other := newExecutor(t, builder())
		got := make(chan error, 1)
		oh := submit(t, t.Context(), other, "o", "o", func(ctx context.Context) (int, error) {
			h, err := groupconc.SubmitWith(ctx, e, "a", "c", succeed, groupconc.SubmitOptions{Block: true})
			if h != nil {
				h.Wait()
			}
			got <- err
			return 0, nil
		})
		synctest.Wait()
		select {
		case err := <-got:
			t.Fatalf("SubmitWith returned %v at once, want it blocked", err)
		default:
		}
		ks[0].Release()
		ks[1].Release()
		assert.NoError(t, <-got)
		quiesce(t, e, hs...)
		quiesce(t, other, oh)
	})
}

// TestPriorityOrdersAParentsLineUnderIsolationOff: tasks of two children
// wait for their parent's own limit; the higher one starts first.
func TestPriorityOrdersAParentsLineUnderIsolationOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2).
			PerGroupMaxConcurrency(map[string]int{"t": 1}))
		k := newGatedTask(t, 0)
		run := submit(t, t.Context(), e, "t/z", "run", k.Fn)
		synctest.Wait()
		var log startLog
		hs := []*groupconc.TaskHandle[int]{
			submitPrio(t, e, "t/u1", "low", groupconc.PriorityLow, log.task("low")),
			submitPrio(t, e, "t/u2", "n", groupconc.PriorityNormal, log.task("n")),
			submitPrio(t, e, "t/u3", "high", groupconc.PriorityHigh, log.task("high")),
			submitPrio(t, e, "t", "top", groupconc.PriorityHighest, log.task("top")),
		}
		synctest.Wait()
		k.Release()
		quiesce(t, e, append(hs, run)...)
		assert.Equal(t, []string{"top", "high", "n", "low"}, log.order())
	})
}

func TestABlockedCallerOfAPausedGroupIsAcceptedOnceItResumes(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultQueueThresholdPerGroup(1))
			first := submit(t, t.Context(), e, "a", "first", succeed)
			first.Wait()
			yes, no := true, false
			require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &yes}))
			w := submit(t, t.Context(), e, "a", "w", succeed)
			c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{})
			synctest.Wait()
			require.False(t, c.returned())
			require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &no}))
			<-c.done
			require.NoError(t, c.err)
			quiesce(t, e, w, c.h)
			assert.Equal(t, groupconc.StatusSuccess, c.h.Wait().Status)
		})
	})
}

func TestRaisingTheGlobalThresholdHandsSlotsToCallersOfEveryGroupByPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := func(q int) *groupconc.PolicyBuilder {
			return builder().GlobalMaxInFlight(1).GlobalQueueThreshold(q)
		}
		e := newExecutor(t, b(0))
		k := newGatedTask(t, 0)
		run := submit(t, t.Context(), e, "a", "run", k.Fn)
		synctest.Wait()
		var log startLog
		var cs []*blocked
		for _, x := range []struct {
			key, id string
			p       groupconc.Priority
		}{{"b", "low", groupconc.PriorityLow}, {"c", "n", 0}, {"d", "high", groupconc.PriorityHigh}} {
			cs = append(cs, submitBlocking(t.Context(), e, x.key, x.id, log.task(x.id), groupconc.SubmitOptions{Priority: x.p}))
			synctest.Wait()
		}
		require.NoError(t, e.UpdatePolicy(mustBuild(t, b(2))))
		synctest.Wait()
		assert.False(t, cs[0].returned(), "the low caller got one of two slots")
		assert.True(t, cs[1].returned())
		assert.True(t, cs[2].returned())
		k.Release()
		var hs []*groupconc.TaskHandle[int]
		for _, c := range cs {
			<-c.done
			require.NoError(t, c.err)
			hs = append(hs, c.h)
		}
		quiesce(t, e, append(hs, run)...)
		assert.Equal(t, []string{"high", "n", "low"}, log.order())
	})
}

func TestABlockedDoCountsInBlockedNeverInWaiting(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			done := make(chan error, 1)
			go func() {
				_, err := groupconc.Do(t.Context(), e, "a", succeed, groupconc.SubmitOptions{Block: true})
				done <- err
			}()
			synctest.Wait()
			gs, _ := e.GroupStats("a")
			assert.Equal(t, 1, gs.Blocked, "GroupStats.Blocked of a blocked Do")
			assert.Equal(t, 1, gs.Waiting)
			st := e.Stats()
			assert.Equal(t, 1, st.Blocked)
			assert.Equal(t, 1, st.Waiting)
			assert.Equal(t, uint64(2), st.Submitted)
			ks[0].Release()
			ks[1].Release()
			assert.NoError(t, <-done)
			quiesce(t, e, hs...)
		})
	})
}

// TestABlockingSubmitInsideADoNeverBlocks: fn holds the group's only
// permit, so waiting for a slot behind the task it holds back would never
// end.
func TestABlockingSubmitInsideADoNeverBlocks(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultQueueThresholdPerGroup(1).RejectionPolicy(groupconc.RejectDiscard))
			var w, inner *groupconc.TaskHandle[int]
			var innerErr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = groupconc.Do(t.Context(), e, "a", func(ctx context.Context) (int, error) {
					w = submit(t, ctx, e, "a", "w", succeed)
					inner, innerErr = groupconc.SubmitWith(ctx, e, "a", "inner", succeed, groupconc.SubmitOptions{Block: true})
					return 0, nil
				}, groupconc.SubmitOptions{})
			}()
			synctest.Wait()
			select {
			case <-done:
			default:
				t.Fatal("a blocking SubmitWith inside Do's fn blocked")
			}
			require.NoError(t, innerErr)
			r := inner.Wait()
			assert.Equal(t, groupconc.StatusRejected, r.Status, "turned away as Block: false")
			quiesce(t, e, w)
		})
	})
}

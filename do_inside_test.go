package groupconc_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A Do inside a task takes no permits, not even of a full or paused
// group, as a part of the running task, but it is counted and reported as
// a task of its own group.
func TestDoInsideATaskIsCountedAsATaskOfItsGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, builder().TaskLifecycleListener(rec)) // a limit of 1
		busy := newGatedTask(t, 0)
		hb := submit(t, t.Context(), e, "b", "busy", busy.Fn)
		paused := true
		require.NoError(t, e.SetGroupOverride("b", groupconc.GroupOverride{Paused: &paused}))
		outer := submit(t, t.Context(), e, "a", "outer", func(ctx context.Context) (int, error) {
			return groupconc.Do(ctx, e, "b", func(context.Context) (int, error) {
				st, _ := e.GroupStats("b")
				assert.Equal(t, 1, st.Running, "the Do holds no permit of b")
				return 7, nil
			}, groupconc.SubmitOptions{})
		})
		assert.Equal(t, 7, outer.Wait().Value)
		busy.Release()
		quiesce(t, e, hb, outer)
		assert.Equal(t, []string{evSubmitted, evStarted, evCompleted}, rec.Events("b", "do-1"))
		res, _ := rec.Result("b", "do-1")
		assert.Equal(t, groupconc.StatusSuccess, res.Status)
		st, _ := e.GroupStats("b")
		assert.Equal(t, uint64(2), st.Succeeded)
		assert.Equal(t, uint64(3), e.Stats().Submitted)
	})
}

// Its context is a task's: the shutdown of its own group cancels it, not
// only the end of the task calling it.
func TestDoInsideATaskIsCancelledByItsGroupsShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		started := make(chan struct{})
		outer := submit(t, t.Context(), e, "a", "outer", func(ctx context.Context) (int, error) {
			_, err := groupconc.Do(ctx, e, "b", func(ctx context.Context) (int, error) {
				close(started)
				<-ctx.Done()
				assert.ErrorIs(t, context.Cause(ctx), groupconc.ErrGroupShutdown)
				return 0, ctx.Err()
			}, groupconc.SubmitOptions{})
			assert.ErrorIs(t, err, context.Canceled)
			return 1, ctx.Err()
		})
		<-started
		e.ShutdownGroup("b")
		r := outer.Wait()
		require.NoError(t, r.Err, "the task calling it goes on")
		quiesce(t, e, outer)
		st, ok := e.GroupStats("b")
		require.True(t, ok)
		assert.Equal(t, uint64(1), st.Cancelled)
	})
}

// A context that ended first returns its error, and fn never runs. A
// panic of fn goes on up through the task, and counts as a failure of the
// Do's group.
func TestDoInsideATaskEndsAsATask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		outer := submit(t, t.Context(), e, "a", "outer", func(ctx context.Context) (v int, err error) {
			ended, cancel := context.WithCancel(ctx)
			cancel()
			ran := false
			_, err = groupconc.Do(ended, e, "b", func(context.Context) (int, error) { ran = true; return 0, nil }, groupconc.SubmitOptions{})
			assert.ErrorIs(t, err, context.Canceled)
			assert.False(t, ran)
			defer func() { v, err = len(recover().(string)), nil }()
			return groupconc.Do(ctx, e, "c", func(context.Context) (int, error) { panic("boom") }, groupconc.SubmitOptions{})
		})
		r := outer.Wait()
		require.NoError(t, r.Err)
		assert.Equal(t, 4, r.Value, "the panic reached the task")
		quiesce(t, e, outer)
		b, _ := e.GroupStats("b")
		c, _ := e.GroupStats("c")
		assert.Equal(t, [2]uint64{1, 1}, [2]uint64{b.Cancelled, c.Failed})
	})
}

// Once Shutdown has begun, no new task is counted: a Do inside a task
// still runs, as a part of that task, which Shutdown waits for.
func TestDoInsideATaskDuringShutdownRunsUncounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		k := newGatedTask(t, 0)
		outer := submit(t, t.Context(), e, "a", "outer", func(ctx context.Context) (int, error) {
			if _, err := k.Fn(ctx); err != nil {
				return 0, err
			}
			return groupconc.Do(ctx, e, "b", func(context.Context) (int, error) { return 5, nil }, groupconc.SubmitOptions{})
		})
		synctest.Wait()
		shut := make(chan error)
		go func() { shut <- e.Shutdown(t.Context()) }()
		synctest.Wait()
		k.Release()
		require.NoError(t, <-shut)
		assert.Equal(t, 5, outer.Wait().Value)
		assert.Equal(t, uint64(1), e.Stats().Submitted)
	})
}

// A Do inside a task enters its group as any task does: a chain of
// parents the policy refuses is an error, and fn never runs.
func TestDoInsideATaskRefusesAGroupThePolicyRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		self := func(key string) string {
			if key == "b" {
				return "b"
			}
			return ""
		}
		e := newExecutor(t, builder().ParentResolver(self))
		outer := submit(t, t.Context(), e, "a", "outer", func(ctx context.Context) (int, error) {
			ran := false
			_, err := groupconc.Do(ctx, e, "b", func(context.Context) (int, error) { ran = true; return 0, nil }, groupconc.SubmitOptions{})
			assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
			assert.False(t, ran)
			return 1, nil
		})
		require.NoError(t, outer.Wait().Err)
		quiesce(t, e, outer)
	})
}

// runtime.Goexit in fn ends the Do's task and the task calling it, both
// FAILED, and every permit comes back.
func TestDoInsideATaskWhoseFnCallsGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		outer := submit(t, t.Context(), e, "a", "outer", func(ctx context.Context) (int, error) {
			return groupconc.Do(ctx, e, "b", func(context.Context) (int, error) {
				runtime.Goexit()
				return 0, nil
			}, groupconc.SubmitOptions{})
		})
		assert.Equal(t, groupconc.StatusFailed, outer.Wait().Status)
		quiesce(t, e, outer)
		b, _ := e.GroupStats("b")
		assert.Equal(t, uint64(1), b.Failed)
	})
}

// A listener that calls runtime.Goexit as it hears of a Do inside a task
// ends the goroutine of the task calling it. Both tasks still end, every
// permit comes back, and Shutdown returns.
func TestDoInsideATaskWhoseListenerCallsGoexit(t *testing.T) {
	goexitOn := func(g string) {
		if g == "b" {
			runtime.Goexit()
		}
	}
	for name, l := range map[string]groupconc.ListenerFuncs{
		"submitted": {Submitted: func(g, _ string) { goexitOn(g) }},
		"started":   {Started: func(g, _ string) { goexitOn(g) }},
		"completed": {Completed: func(g, _ string, _ groupconc.GroupResult[any]) { goexitOn(g) }},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().TaskLifecycleListener(l))
				outer := submit(t, t.Context(), e, "a", "outer", func(ctx context.Context) (int, error) {
					return groupconc.Do(ctx, e, "b", func(context.Context) (int, error) { return 1, nil }, groupconc.SubmitOptions{})
				})
				assert.Equal(t, groupconc.StatusFailed, outer.Wait().Status)
				require.NoError(t, e.Shutdown(t.Context()))
				quiesce(t, e, outer)
				st := e.Stats()
				assert.Equal(t, uint64(2), st.Submitted)
				assert.Equal(t, st.Submitted, st.Succeeded+st.Failed+st.Cancelled+st.Rejected)
			})
		})
	}
}

// After Close, a Do inside a task, whose context Close cancelled, returns
// the context's error and fn never runs.
func TestDoInsideATaskAfterCloseNeverRunsFn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		k := newGatedTask(t, 0)
		ran := false
		outer := submit(t, t.Context(), e, "a", "outer", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			k.Fn(context.Background())
			return groupconc.Do(ctx, e, "b", func(context.Context) (int, error) { ran = true; return 1, nil }, groupconc.SubmitOptions{})
		})
		synctest.Wait()
		require.NoError(t, e.Close())
		synctest.Wait()
		k.Release()
		r := outer.Wait()
		assert.ErrorIs(t, r.Err, context.Canceled, "Do returned ctx.Err()")
		assert.False(t, ran)
		synctest.Wait()
	})
}

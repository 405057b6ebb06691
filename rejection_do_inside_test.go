package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A task turned away holds no permit. So a Do made with its context, in
// its RejectionHandler or in its function run under RejectCallerRuns, has
// no permits to run under. It waits for those of its own group, as any Do
// does, and does not start in a full or paused group.
func TestADoMadeByATaskTurnedAwayWaitsForItsGroup(t *testing.T) {
	for _, by := range []string{"handler", "caller-runs"} {
		for _, how := range []string{"full", "paused"} {
			t.Run(by+"/"+how, func(t *testing.T) {
				forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
					synctest.Test(t, func(t *testing.T) {
						var e *groupconc.GroupExecutor
						var inA gauge
						ran := make(chan struct{})
						doInA := func(ctx context.Context) (int, error) {
							return groupconc.Do(ctx, e, "a", func(context.Context) (int, error) {
								inA.enter()
								defer inA.exit()
								close(ran)
								return 7, nil
							}, groupconc.SubmitOptions{})
						}
						b := modeBuilder(mode).DefaultMaxConcurrencyPerGroup(1).PerGroupQueueThreshold(map[string]int{"b": 0})
						if by == "handler" {
							b.RejectionHandler(func(ctx context.Context, _ *groupconc.Rejection) (any, error) { return doInA(ctx) })
						} else {
							b.RejectionPolicy(groupconc.RejectCallerRuns)
						}
						e = newExecutor(t, b)
						hold, busy := newGatedTask(t, 1), newGatedTask(t, 2)
						hs := []*groupconc.TaskHandle[int]{submitGated(t, e, "b", "busy", busy, groupconc.SubmitOptions{})}
						paused := how == "paused"
						if paused {
							make := submit(t, context.Background(), e, "a", "make", succeed) // the group to pause
							hs = append(hs, make)
							make.Wait()
							require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &paused}))
						} else {
							hs = append(hs, submitGated(t, e, "a", "hold", hold, groupconc.SubmitOptions{}))
						}
						synctest.Wait()
						x := submit(t, context.Background(), e, "b", "x", doInA) // b is full: x is turned away
						hs = append(hs, x)
						synctest.Wait()
						select {
						case <-ran:
							t.Fatalf("a Do of a task turned away ran in %s group a", how)
						default:
						}
						assert.False(t, x.IsDone(), "its Do waits")
						if paused {
							paused = false
							require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &paused}))
						} else {
							hold.Release()
						}
						r := x.Wait()
						assert.Equal(t, groupconc.StatusSuccess, r.Status, "%v", r.Err)
						assert.Equal(t, 7, r.Value)
						assert.EqualValues(t, 1, inA.max.Load())
						busy.Release()
						quiesce(t, e, hs...)
					})
				})
			})
		}
	}
}

// A task turned away whose caller is a running task of the executor asks
// that task. So a Do its handler makes runs at once under the running
// task's permits, which it may need: here the running task waits for it.
func TestADoMadeByATaskTurnedAwayInsideARunningTaskRunsUnderItsPermits(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var e *groupconc.GroupExecutor
			h := func(ctx context.Context, _ *groupconc.Rejection) (any, error) {
				return groupconc.Do(ctx, e, "a", func(context.Context) (int, error) { return 7, nil }, groupconc.SubmitOptions{})
			}
			e = newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(1).
				PerGroupQueueThreshold(map[string]int{"b": 0}).RejectionHandler(h))
			busy := newGatedTask(t, 1)
			hb := submitGated(t, e, "b", "busy", busy, groupconc.SubmitOptions{})
			synctest.Wait()
			outer := submit(t, context.Background(), e, "a", "outer", func(ctx context.Context) (int, error) {
				inner, err := groupconc.Submit(ctx, e, "b", "inner", succeed) // b is full: turned away
				if err != nil {
					return 0, err
				}
				r := inner.Wait()
				return r.Value, r.Err
			})
			r := outer.Wait()
			assert.Equal(t, groupconc.StatusSuccess, r.Status, "%v", r.Err)
			assert.Equal(t, 7, r.Value)
			busy.Release()
			quiesce(t, e, hb, outer)
		})
	})
}

// A Do inside a task runs under that task's permits only while the task
// runs. Its function, still running on a goroutine the task started once
// the task returned, holds none. A context kept past the cancel
// (context.WithoutCancel) says so too: a Do made with it waits for its
// group, here held by the next task.
func TestADoMadeWithAKeptContextOfADoInsideATaskThatReturnedWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder()) // a limit of 1
		returned := make(chan struct{})
		ran := make(chan struct{})
		var d *doAsync
		outer := submit(t, context.Background(), e, "a", "outer", func(ctx context.Context) (int, error) {
			d = goDo(ctx, e, "a", func(ictx context.Context) (int, error) {
				<-returned
				return groupconc.Do(context.WithoutCancel(ictx), e, "a", func(context.Context) (int, error) {
					close(ran)
					return 3, nil
				}, groupconc.SubmitOptions{})
			}, groupconc.SubmitOptions{})
			synctest.Wait()
			return 1, nil
		})
		require.NoError(t, outer.Wait().Err)
		next := newGatedTask(t, 2)
		hn := submitGated(t, e, "a", "next", next, groupconc.SubmitOptions{})
		synctest.Wait()
		require.True(t, next.started.Load(), "outer's permit is back")
		close(returned)
		synctest.Wait()
		select {
		case <-ran:
			t.Fatal("a Do ran in group a while the next task holds its permit")
		default:
		}
		next.Release()
		<-d.done
		require.NoError(t, d.err)
		assert.Equal(t, 3, d.v)
		quiesce(t, e, outer, hn)
	})
}

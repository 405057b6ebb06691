package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// blocked is a SubmitWith{Block: true} call running on a goroutine of its own.
type blocked struct {
	h    *groupconc.TaskHandle[int]
	err  error
	done chan struct{}
}

func submitBlocking(ctx context.Context, e *groupconc.GroupExecutor, key, id string, fn groupconc.Task[int], opts groupconc.SubmitOptions) *blocked {
	b := &blocked{done: make(chan struct{})}
	opts.Block = true
	go func() {
		defer close(b.done)
		b.h, b.err = groupconc.SubmitWith(ctx, e, key, id, fn, opts)
	}()
	return b
}

func (b *blocked) returned() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// fullGroup builds an executor whose group "a" runs one task (the first
// gated task returned) and has one waiting (the second): its queue of
// threshold 1 is full.
func fullGroup(t *testing.T, mode groupconc.IsolationMode, b *groupconc.PolicyBuilder) (*groupconc.GroupExecutor, []*gatedTask, []*groupconc.TaskHandle[int]) {
	t.Helper()
	if b == nil {
		b = builder()
	}
	b.DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1).Isolation(mode)
	if mode == groupconc.IsolationFairShare {
		b.GlobalMaxInFlight(4)
	}
	e := newExecutor(t, b)
	ks := []*gatedTask{newGatedTask(t, 1), newGatedTask(t, 2)}
	var hs []*groupconc.TaskHandle[int]
	for i, k := range ks {
		hs = append(hs, submit(t, t.Context(), e, "a", string(rune('0'+i)), k.Fn))
	}
	synctest.Wait()
	require.True(t, ks[0].started.Load())
	requireWaiting(t, hs[1], ks[1])
	return e, ks, hs
}

func TestBlockedCallerGetsTheSlotAFinishingTaskFrees(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{})
			synctest.Wait()
			require.False(t, c.returned(), "SubmitWith returned with the queue full, want it blocked")
			st := e.Stats()
			assert.Equal(t, 1, st.Blocked, "Stats().Blocked")
			assert.Equal(t, uint64(2), st.Submitted, "a blocked caller is not submitted yet")
			gs, _ := e.GroupStats("a")
			assert.Equal(t, 1, gs.Blocked, "GroupStats.Blocked")
			assert.Equal(t, 1, gs.Waiting, "a blocked caller is not waiting")

			ks[0].Release() // task 1 starts, its slot goes to c
			synctest.Wait()
			require.True(t, c.returned())
			require.NoError(t, c.err)
			assert.Equal(t, 0, e.Stats().Blocked)
			ks[1].Release()
			r := c.h.Wait()
			assert.Equal(t, groupconc.StatusSuccess, r.Status)
			quiesce(t, e, hs...)
		})
	})
}

func TestBlockingCallerEndsWithItsContextAndSubmitsNothing(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			ctx, cancel := context.WithCancel(t.Context())
			c := submitBlocking(ctx, e, "a", "c", succeed, groupconc.SubmitOptions{})
			synctest.Wait()
			cancel()
			synctest.Wait()
			require.True(t, c.returned())
			assert.Nil(t, c.h)
			assert.ErrorIs(t, c.err, context.Canceled)
			assert.Equal(t, uint64(2), e.Stats().Submitted)
			assert.Equal(t, 0, e.Stats().Blocked)
			ks[0].Release()
			ks[1].Release()
			quiesce(t, e, hs...)
		})
	})
}

func TestBlockingCallerPastMaxWaitIsTurnedAwayThroughThePolicy(t *testing.T) {
	handler := func(ctx context.Context, r *groupconc.Rejection) (any, error) { return 7, nil }
	cases := []struct {
		name   string
		b      func() *groupconc.PolicyBuilder
		status groupconc.TaskStatus
		value  int
		await  bool // Await returns the *RejectedError
	}{
		{"abort", builder, groupconc.StatusRejected, 0, true},
		{"discard", func() *groupconc.PolicyBuilder { return builder().RejectionPolicy(groupconc.RejectDiscard) }, groupconc.StatusRejected, 0, false},
		{"caller runs", func() *groupconc.PolicyBuilder { return builder().RejectionPolicy(groupconc.RejectCallerRuns) }, groupconc.StatusSuccess, 1, false},
		{"handler", func() *groupconc.PolicyBuilder { return builder().RejectionHandler(handler) }, groupconc.StatusSuccess, 7, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) {
					rec := newRecorder()
					e, ks, hs := fullGroup(t, mode, tc.b().TaskLifecycleListener(rec))
					start := time.Now()
					c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{MaxWait: 3 * time.Second})
					synctest.Wait()
					require.False(t, c.returned())
					<-c.done
					assert.Equal(t, 3*time.Second, time.Since(start), "the wait lasted")
					require.NoError(t, c.err)
					r, err := c.h.Await(t.Context())
					assert.Equal(t, tc.status, r.Status)
					assert.Equal(t, tc.value, r.Value)
					if tc.await {
						var re *groupconc.RejectedError
						require.ErrorAs(t, err, &re)
						assert.Equal(t, groupconc.ReasonWaitTimeout, re.Reason)
					} else {
						assert.NoError(t, err)
					}
					assert.Equal(t, groupconc.ReasonWaitTimeout, rec.Reason("a", "c"))
					assert.Equal(t, uint64(3), e.Stats().Submitted)
					ks[0].Release()
					ks[1].Release()
					quiesce(t, e, hs...)
				})
			})
		})
	}
}

func TestBlockedCallersGiveUpWhenTheExecutorOrTheGroupStops(t *testing.T) {
	cases := []struct {
		name string
		stop func(e *groupconc.GroupExecutor)
		want error
	}{
		{"Shutdown", func(e *groupconc.GroupExecutor) { go func() { _ = e.Shutdown(context.Background()) }() }, groupconc.ErrClosed},
		{"Close", func(e *groupconc.GroupExecutor) { _ = e.Close() }, groupconc.ErrClosed},
		{"ShutdownGroup", func(e *groupconc.GroupExecutor) { e.ShutdownGroup("a") }, groupconc.ErrGroupShutdown},
		{"EvictGroup", func(e *groupconc.GroupExecutor) { e.EvictGroup("a") }, groupconc.ErrGroupEvicted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) {
					e, ks, hs := fullGroup(t, mode, nil)
					c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{})
					synctest.Wait()
					tc.stop(e)
					synctest.Wait()
					require.True(t, c.returned(), "the blocked caller still waits after %s", tc.name)
					assert.Nil(t, c.h)
					assert.ErrorIs(t, c.err, tc.want)
					assert.Equal(t, 0, e.Stats().Blocked)
					ks[0].Release()
					ks[1].Release()
					for _, h := range hs {
						h.Wait()
					}
					require.NoError(t, e.Shutdown(t.Context()))
				})
			})
		})
	}
}

func TestShutdownAndCloseReturnOnlyAfterBlockedCallersGaveUp(t *testing.T) {
	stops := map[string]func(t *testing.T, e *groupconc.GroupExecutor){
		"Close": func(_ *testing.T, e *groupconc.GroupExecutor) { _ = e.Close() },
		"Shutdown": func(t *testing.T, e *groupconc.GroupExecutor) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel() // it cancels what remains and returns at once
			_ = e.Shutdown(ctx)
		},
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, ks, hs := fullGroup(t, groupconc.IsolationOff, nil)
				c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{})
				synctest.Wait()
				require.Equal(t, 1, e.Stats().Blocked)
				stop(t, e)
				// Nothing ran in between: the caller left its wait before
				// the call returned.
				assert.Equal(t, 0, e.Stats().Blocked, "a caller still blocked after %s returned", name)
				<-c.done
				assert.ErrorIs(t, c.err, groupconc.ErrClosed)
				ks[0].Release()
				ks[1].Release()
				for _, h := range hs {
					h.Wait()
				}
			})
		})
	}
}

func TestRaisingTheThresholdHandsSlotsToBlockedCallersInOrder(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			var cs []*blocked
			for _, id := range []string{"c1", "c2", "c3"} {
				cs = append(cs, submitBlocking(t.Context(), e, "a", id, succeed, groupconc.SubmitOptions{}))
				synctest.Wait()
			}
			lower := mustBuild(t, builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).Isolation(mode).GlobalMaxInFlight(4))
			require.NoError(t, e.UpdatePolicy(lower))
			synctest.Wait()
			for _, c := range cs {
				require.False(t, c.returned(), "a lowered threshold fails no blocked caller")
			}
			raise := mustBuild(t, builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(3).Isolation(mode).GlobalMaxInFlight(4))
			require.NoError(t, e.UpdatePolicy(raise))
			synctest.Wait()
			assert.True(t, cs[0].returned())
			assert.True(t, cs[1].returned())
			assert.False(t, cs[2].returned(), "only two slots were freed")
			ks[0].Release()
			synctest.Wait()
			assert.True(t, cs[2].returned())
			ks[1].Release()
			for _, c := range cs {
				require.NoError(t, c.err)
				assert.Equal(t, groupconc.StatusSuccess, c.h.Wait().Status)
			}
			quiesce(t, e, hs...)
		})
	})
}

package groupconc_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Goexit in a rejection handler, in a caller-runs task, and in
// a task the handler runs through Rejection.Run: the handle completes
// FAILED, the permits come back, the executor keeps working.
func TestAGoexitOnTheRejectedPaths(t *testing.T) {
	cases := map[string]func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder{
		"handler-goexit": func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) {
				runtime.Goexit()
				return nil, nil
			})
		},
		"handler-run-goexit": func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) {
				return r.Run(ctx)
			})
		},
		"caller-runs-goexit": func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.RejectionPolicy(groupconc.RejectCallerRuns)
		},
	}
	for name, mk := range cases {
		for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rec := newRecorder()
					p := mustBuild(t, mk(builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).TaskLifecycleListener(rec)))
					e := groupconc.New(p)
					hold := newGatedTask(t, 1)
					h0 := submitGated(t, e, "a", "hold", hold, groupconc.SubmitOptions{})
					synctest.Wait()
					h, err := groupconc.Submit(t.Context(), e, "a", evRejected, func(context.Context) (int, error) {
						runtime.Goexit()
						return 0, nil
					})
					require.NoError(t, err)
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					res, _ := h.Await(ctx)
					assert.NotEqual(t, groupconc.StatusCancelled, res.Status, "the handle hangs: %v", res.Err)
					assert.Equal(t, groupconc.StatusFailed, res.Status, "err %v", res.Err)
					hold.Release()
					h0.Wait()
					synctest.Wait()
					assert.NoError(t, e.Quiescent())
					// still works
					h2, err := groupconc.Submit(t.Context(), e, "a", "after", succeed)
					require.NoError(t, err)
					assert.Equal(t, groupconc.StatusSuccess, h2.Wait().Status)
					evs := rec.Events("a", evRejected)
					assert.Equal(t, evSubmitted, evs[0])
					assert.Contains(t, evs, evRejected)
					if len(evs) > 2 && evs[2] == evStarted {
						assert.Equal(t, evCompleted, evs[len(evs)-1], "events %v", evs)
					} else {
						assert.Equal(t, []string{evSubmitted, evRejected}, evs, "never run: no OnCompleted")
					}
					require.NoError(t, e.Shutdown(t.Context()))
				})
			})
		}
	}
}

// two Cancels racing each other and the function's return: exactly
// one true, one terminal result, one OnCompleted.
func TestTwoCancelsRacingCompletion(t *testing.T) {
	for i := range 100 {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e := groupconc.New(mustBuild(t, builder().TaskLifecycleListener(rec)))
			gate := make(chan struct{})
			h, err := groupconc.Submit(t.Context(), e, "a", "x", func(context.Context) (int, error) { <-gate; return 7, nil })
			require.NoError(t, err)
			synctest.Wait()
			var trues atomic.Int32
			var wg sync.WaitGroup
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if i%3 == 0 {
						runtime.Gosched()
					}
					if h.Cancel() {
						trues.Add(1)
					}
				}()
			}
			if i%2 == 0 {
				close(gate)
			}
			wg.Wait()
			if i%2 == 1 {
				close(gate)
			}
			synctest.Wait()
			r1 := h.Wait()
			r2 := h.Wait()
			assert.Equal(t, r1, r2)
			assert.LessOrEqual(t, trues.Load(), int32(1))
			if trues.Load() == 1 {
				assert.Equal(t, groupconc.StatusCancelled, r1.Status)
			} else {
				assert.Equal(t, groupconc.StatusSuccess, r1.Status)
			}
			assert.Equal(t, []string{evSubmitted, evStarted, evCompleted}, rec.Events("a", "x"))
			require.NoError(t, e.Quiescent())
			require.NoError(t, e.Shutdown(t.Context()))
		})
	}
}

// one case per policy with the queue full: one rejected event, no
// started event (except caller-runs), the handle resolves at once.
func TestEveryPolicyResolvesARejectedTask(t *testing.T) {
	for _, pol := range []groupconc.RejectionPolicy{groupconc.RejectAbort, groupconc.RejectDiscard, groupconc.RejectCallerRuns, groupconc.RejectDiscardOldest} {
		for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
			t.Run(pol.String()+"/"+mode.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rec := newRecorder()
					e := groupconc.New(mustBuild(t, builder().Isolation(mode).RejectionPolicy(pol).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1).TaskLifecycleListener(rec)))
					hold := newGatedTask(t, 1)
					submitGated(t, e, "a", "hold", hold, groupconc.SubmitOptions{})
					w := newGatedTask(t, 2)
					hw := submitGated(t, e, "a", "w", w, groupconc.SubmitOptions{Priority: groupconc.PriorityHigh})
					synctest.Wait()
					h, err := groupconc.Submit(t.Context(), e, "a", "r", succeed)
					require.NoError(t, err)
					synctest.Wait()
					require.True(t, h.IsDone())
					res, aerr := h.Await(t.Context())
					switch pol {
					case groupconc.RejectCallerRuns:
						assert.Equal(t, groupconc.StatusSuccess, res.Status)
						assert.Equal(t, []string{evSubmitted, evRejected, evStarted, evCompleted}, rec.Events("a", "r"))
					case groupconc.RejectAbort:
						assert.Equal(t, groupconc.StatusRejected, res.Status)
						assert.ErrorIs(t, aerr, groupconc.ErrRejected)
						assert.Equal(t, []string{evSubmitted, evRejected, evCompleted}[:2], rec.Events("a", "r")[:2])
						assert.NotContains(t, rec.Events("a", "r"), evStarted)
					default:
						assert.Equal(t, groupconc.StatusRejected, res.Status)
						assert.NoError(t, aerr)
						assert.NotContains(t, rec.Events("a", "r"), evStarted)
					}
					assert.False(t, hw.IsDone())
					hold.Release()
					w.Release()
					hw.Wait()
					synctest.Wait()
					require.NoError(t, e.Quiescent())
					require.NoError(t, e.Shutdown(t.Context()))
					rec.mu.Lock()
					defer rec.mu.Unlock()
					for id, evs := range rec.events {
						n := 0
						for _, ev := range evs {
							if ev == evRejected {
								n++
							}
						}
						assert.LessOrEqual(t, n, 1, "%s: %v", id, evs)
					}
				})
			})
		}
	}
}

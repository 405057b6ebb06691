package groupconc_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// a listener (each event) or a rejection handler that calls back
// into the executor on the task's own group: no deadlock, every handle
// resolves, Shutdown drains, permits back.
func TestListenersAndHandlersReenterOnTheirOwnGroup(t *testing.T) {
	actions := []string{"submit", "evict", "shutdowngroup", "pause", "resume", "update", "stats", "allstats", "close", "lower"}
	events := []string{"submitted", "started", "completed", "rejected", "handler"}
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		for _, ev := range events {
			for _, act := range actions {
				t.Run(fmt.Sprintf("%s/%s/%s", mode, ev, act), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						var e *groupconc.GroupExecutor
						var calls atomic.Int32
						back := func(g string) {
							if g != "a/x" && g != "a" || calls.Add(1) > 3 {
								return
							}
							switch act {
							case "submit":
								_, _ = groupconc.Submit(context.Background(), e, g, fmt.Sprintf("re%d", calls.Load()), succeed)
							case "evict":
								e.EvictGroup(g)
							case "shutdowngroup":
								e.ShutdownGroup("a")
							case "pause":
								tr := true
								_ = e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &tr})
							case "resume":
								f := false
								_ = e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &f})
							case "lower":
								one := 1
								_ = e.SetGroupOverride(g, groupconc.GroupOverride{MaxConcurrency: &one})
							case "update":
								_ = e.UpdatePolicy(e.Policy())
							case "stats":
								_ = e.Stats()
								_, _ = e.GroupStats(g)
							case "allstats":
								for range e.AllGroupStats() {
								}
							case "close":
								_ = e.Close()
							}
						}
						l := groupconc.ListenerFuncs{}
						switch ev {
						case "submitted":
							l.Submitted = func(g, _ string) { back(g) }
						case "started":
							l.Started = func(g, _ string) { back(g) }
						case "completed":
							l.Completed = func(g, _ string, _ groupconc.GroupResult[any]) { back(g) }
						case "rejected":
							l.Rejected = func(g, _, _ string) { back(g) }
						}
						b := builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2).DefaultQueueThresholdPerGroup(1).TaskLifecycleListener(l)
						if ev == "handler" {
							b = b.RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) {
								back(r.GroupKey)
								return r.Run(ctx)
							})
						}
						e = groupconc.New(mustBuild(t, b))
						var hs []*groupconc.TaskHandle[int]
						var ks []*gatedTask
						for i := range 5 {
							k := newGatedTask(t, i)
							ks = append(ks, k)
							h, err := groupconc.Submit(context.Background(), e, "a/x", fmt.Sprintf("t%d", i), k.Fn)
							if err != nil {
								require.ErrorIs(t, err, groupconc.ErrClosed)
								continue
							}
							hs = append(hs, h)
						}
						synctest.Wait()
						for _, k := range ks {
							k.Release()
						}
						f := false
						for range 5 { // a listener may pause again as later tasks end
							synctest.Wait()
							_ = e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &f})
						}
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
						defer cancel()
						for _, h := range hs {
							_, err := h.Await(ctx)
							if err != nil {
								assert.ErrorIs(t, err, groupconc.ErrRejected)
							}
							assert.True(t, h.IsDone(), "handle %s never resolved", h.TaskID())
						}
						synctest.Wait()
						require.NoError(t, e.Shutdown(ctx))
						require.NoError(t, e.Quiescent())
						s := e.Stats()
						assert.Equal(t, s.Submitted, s.Succeeded+s.Failed+s.Cancelled+s.Rejected, "%+v", s)
					})
				})
			}
		}
	}
}

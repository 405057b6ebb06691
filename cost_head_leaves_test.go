package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// a costly head waiter that has been handed part of the
// permits it needs leaves by every route; the cheap waiter behind it must
// start with the permits freed, and everything is given back at the end.
func TestACostlyHeadLeavingByAnyRouteDoesNotStrandTheCheapOneBehind(t *testing.T) {
	type layer struct {
		name string
		b    func(mode groupconc.IsolationMode) *groupconc.PolicyBuilder
		run  string // group of the running tasks
		big  string // group of the costly waiter
		tiny string // group of the cheap waiter
	}
	layers := []layer{
		{"global", func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
			return builder().Isolation(m).GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(10)
		}, "a", "b", "c"},
		{"concurrency", func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
			return builder().Isolation(m).DefaultMaxConcurrencyPerGroup(4)
		}, "a", "a", "a"},
		{"bulkhead", func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
			return builder().Isolation(m).DefaultMaxInFlightPerGroup(4).DefaultMaxConcurrencyPerGroup(10)
		}, "a", "a", "a"},
		{"parent", func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
			return builder().Isolation(m).ParentSeparator("/").PerGroupMaxConcurrency(map[string]int{"t": 4}).DefaultMaxConcurrencyPerGroup(10)
		}, "t/u1", "t/u2", "t/u3"},
	}
	routes := []string{"cancel", "ctx", "shutdowngroup", "evict", "pause", "lower-global"}
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		for _, l := range layers {
			for _, route := range routes {
				t.Run(mode.String()+"/"+l.name+"/"+route, func(t *testing.T) {
					if l.big == l.tiny && (route == "shutdowngroup" || route == "evict" || route == "pause") {
						t.Skip("stopping the costly one's group stops the cheap one too")
					}
					synctest.Test(t, func(t *testing.T) {
						p := mustBuild(t, l.b(mode))
						e := groupconc.New(p)
						var running []*gatedTask
						for range 3 {
							k := newGatedTask(t, 1)
							running = append(running, k)
							submitGated(t, e, l.run, "", k, groupconc.SubmitOptions{})
						}
						synctest.Wait()
						require.Equal(t, 3, startedCount(running...))
						bigCtx, bigCancel := context.WithCancel(context.Background())
						defer bigCancel()
						big := newGatedTask(t, 2)
						hb, err := groupconc.SubmitWith(bigCtx, e, l.big, "big", big.Fn, groupconc.SubmitOptions{Cost: 4})
						require.NoError(t, err)
						synctest.Wait()
						tiny := newGatedTask(t, 3)
						ht := submitGated(t, e, l.tiny, "tiny", tiny, groupconc.SubmitOptions{})
						synctest.Wait()
						require.False(t, big.started.Load())
						require.False(t, tiny.started.Load(), "nothing overtakes the costly waiter")
						switch route {
						case "cancel":
							hb.Cancel()
						case "ctx":
							bigCancel()
						case "shutdowngroup":
							e.ShutdownGroup(l.big)
						case "evict":
							e.EvictGroup(l.big)
						case "pause":
							if l.big == l.tiny {
								t.Skip("pausing the costly one's group pauses the cheap one too")
							}
							tr := true
							require.NoError(t, e.SetGroupOverride(l.big, groupconc.GroupOverride{Paused: &tr}))
						case "lower-global":
							if l.name != "global" {
								t.Skip()
							}
							// raise nothing, lower nothing for tiny: cap stays 4 but the
							// costly one is cancelled through Cancel after a no-op update
							require.NoError(t, e.UpdatePolicy(mustBuild(t, l.b(mode))))
							hb.Cancel()
						}
						synctest.Wait()
						assert.False(t, big.started.Load(), "the costly one never ran")
						assert.True(t, tiny.started.Load(), "the cheap one behind the costly one that left must start")
						for _, k := range running {
							k.Release()
						}
						tiny.Release()
						if route == "pause" {
							f := false
							require.NoError(t, e.SetGroupOverride(l.big, groupconc.GroupOverride{Paused: &f}))
						}
						big.Release()
						synctest.Wait()
						ht.Wait()
						if route != "pause" {
							assert.Equal(t, groupconc.StatusCancelled, hb.Wait().Status)
						} else {
							hb.Wait()
						}
						synctest.Wait()
						require.NoError(t, e.Quiescent())
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
						defer cancel()
						require.NoError(t, e.Shutdown(ctx))
					})
				})
			}
		}
	}
}

package groupconc_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// FuzzOps found these; each is its input made small and deterministic.

// A parent's lowered limit sends back the subtree's tasks that hold its
// permit and still wait at a later layer, as a group's own lowered limit
// does. Two users of limit 1 under a tenant: each runs one task while one
// more waits for the user's limit, holding the tenant's permit. The
// tenant's bulkhead is lowered to 1. When the running tasks end, the
// waiting ones may start one at a time only.
func TestFuzzTreeRegression1(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			policy := func(tenant int) *groupconc.PolicyBuilder {
				return builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(1).
					PerGroupMaxConcurrency(map[string]int{"t": 4}).PerGroupMaxInFlight(map[string]int{"t": tenant})
			}
			e := newExecutor(t, policy(4))
			var ks []*gatedTask
			var hs []*groupconc.TaskHandle[int]
			for _, key := range []string{"t/u1", "t/u2", "t/u1", "t/u2"} {
				k := newGatedTask(t, 1)
				ks, hs = append(ks, k), append(hs, submitGated(t, e, key, "", k, groupconc.SubmitOptions{}))
				synctest.Wait()
			}
			requireWaiting(t, hs[2], ks[2])
			requireWaiting(t, hs[3], ks[3])
			st, _ := e.GroupStats("t")
			require.Equal(t, 4, st.InFlight, "the waiting tasks hold the tenant's permits")

			require.NoError(t, e.UpdatePolicy(mustBuild(t, policy(1))))
			synctest.Wait()
			st, _ = e.GroupStats("t")
			assert.LessOrEqual(t, st.InFlight, 2, "the waiting tasks go back to the tenant's line; the running two drain")
			ks[0].Release()
			ks[1].Release()
			synctest.Wait()
			assert.False(t, ks[2].started.Load() && ks[3].started.Load(), "two started under a tenant bulkhead of 1")
			st, _ = e.GroupStats("t")
			assert.LessOrEqual(t, st.Running, 1)
			ks[2].Release()
			ks[3].Release()
			quiesce(t, e, hs...)
		})
	})
}

// ShutdownGroup and EvictGroup of a paused parent end the tasks its pause
// holds back. A user is paused, and a task of its own or of a group under
// it waits. The user (or its tenant) is evicted or shut down: the task
// ends, nothing is left waiting, and Shutdown returns.
func TestFuzzTreeRegression2(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, tc := range []struct{ name, paused, submit, evict string }{
			{"own", "t/u", "t/u", "t/u"},
			{"child", "t/u", "t/u/x", "t/u"},
			{"tenant", "t/u", "t/u/x", "t"},
			{"shutdown", "t/u", "t/u/x", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/"))
					k := newGatedTask(t, 1)
					k.Release()
					submitGated(t, e, tc.paused, "", k, groupconc.SubmitOptions{}).Wait()
					yes := true
					require.NoError(t, e.SetGroupOverride(tc.paused, groupconc.GroupOverride{Paused: &yes}))
					h := submitGated(t, e, tc.submit, "", k, groupconc.SubmitOptions{})
					synctest.Wait()
					require.False(t, h.IsDone())
					if tc.evict == "" {
						e.ShutdownGroup(tc.paused)
					} else {
						e.EvictGroup(tc.evict)
					}
					synctest.Wait()
					assert.True(t, h.IsDone(), "a task held back by a pause outlived its group")
					assert.Zero(t, e.Stats().Waiting)
					require.NoError(t, e.Close())
					ctx, cancel := context.WithTimeout(t.Context(), time.Second)
					defer cancel()
					assert.NoError(t, e.Shutdown(ctx), "Close and Shutdown end every task")
					assert.True(t, h.IsDone(), "a task outlived Shutdown")
				})
			})
		}
	})
}

// EvictGroup ends a task sent back to its line by a lowered limit while a
// sibling group is paused. Users of limit 2 and bulkhead 3 under a tenant
// of limit 3: u1 runs two, u2 runs one and is paused, and a third task of
// u1 waits holding u1's bulkhead. The users' limit is lowered to 1, which
// sends that task back to u1's bulkhead line. Evicting u1 (or the tenant)
// must end it; ShutdownGroup must cancel it.
func TestFuzzTreeRegression3(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, end := range []string{"evict t0/u1", "evict t0", "shutdown t0/u1"} {
			t.Run(end, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					policy := func(c int) *groupconc.GroupPolicy {
						return mustBuild(t, builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(c).
							DefaultMaxInFlightPerGroup(3).PerGroupMaxConcurrency(map[string]int{"t0": 3}))
					}
					e := groupconc.New(policy(2))
					t.Cleanup(func() { _ = e.Close() })
					var ks []*gatedTask
					for _, key := range []string{"t0/u1", "t0/u1", "t0/u2"} {
						k := newGatedTask(t, 1)
						ks = append(ks, k)
						submitGated(t, e, key, "", k, groupconc.SubmitOptions{})
					}
					synctest.Wait()
					yes := true
					require.NoError(t, e.SetGroupOverride("t0/u2", groupconc.GroupOverride{Paused: &yes}))
					k := newGatedTask(t, 1)
					h := submitGated(t, e, "t0/u1", "", k, groupconc.SubmitOptions{})
					synctest.Wait()
					requireWaiting(t, h, k)
					require.NoError(t, e.UpdatePolicy(policy(1)))
					synctest.Wait()
					verb, key, _ := strings.Cut(end, " ")
					if verb == "evict" {
						e.EvictGroup(key)
					} else {
						e.ShutdownGroup(key)
					}
					synctest.Wait()
					assert.True(t, h.IsDone(), "the waiting task outlived its group")
					assert.False(t, k.started.Load())
					for _, k := range ks {
						k.Release()
					}
					require.NoError(t, e.Close())
					ctx, cancel := context.WithTimeout(t.Context(), time.Second)
					defer cancel()
					assert.NoError(t, e.Shutdown(ctx), "Close and Shutdown end every task")
				})
			})
		}
	})
}

// A parent's lowered bulkhead sends back a child's task that waits for the
// parent's concurrency, and every permit comes back after, also when the
// task is cancelled while back in line. Tenant t1 runs a task of its own
// at its limit of 1. A task of t1/u1 waits for t1's limit, holding t1's
// bulkhead. t1's bulkhead is lowered to 1 (by an override or by
// UpdatePolicy), and the child's task goes back to t1's bulkhead line. It
// then starts, or is cancelled, and nothing is left held.
func TestFuzzTreeRegression4(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, how := range []string{"override", "update", "override cancel", "update cancel"} {
			t.Run(how, func(t *testing.T) {
				how, cancel := strings.CutSuffix(how, " cancel")
				synctest.Test(t, func(t *testing.T) {
					policy := func(bulkhead int) *groupconc.GroupPolicy {
						return mustBuild(t, builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(1).
							PerGroupMaxInFlight(map[string]int{"t1": bulkhead}))
					}
					e := groupconc.New(policy(groupconc.Unlimited))
					t.Cleanup(func() { _ = e.Close() })
					a, b := newGatedTask(t, 1), newGatedTask(t, 2)
					ha := submitGated(t, e, "t1", "", a, groupconc.SubmitOptions{})
					synctest.Wait()
					hb := submitGated(t, e, "t1/u1", "", b, groupconc.SubmitOptions{})
					synctest.Wait()
					requireWaiting(t, hb, b)
					st, _ := e.GroupStats("t1")
					require.Equal(t, 2, st.InFlight)
					if how == "override" {
						one := 1
						require.NoError(t, e.SetGroupOverride("t1", groupconc.GroupOverride{MaxInFlight: &one}))
					} else {
						require.NoError(t, e.UpdatePolicy(policy(1)))
					}
					synctest.Wait()
					requireWaiting(t, hb, b)
					st, _ = e.GroupStats("t1")
					assert.Equal(t, 1, st.InFlight, "the child's task went back to t1's bulkhead line")
					if cancel {
						assert.True(t, hb.Cancel())
					}
					a.Release()
					synctest.Wait()
					assert.True(t, cancel || b.started.Load(), "t1's own task ended: the child's starts")
					b.Release()
					ha.Wait()
					hb.Wait()
					synctest.Wait()
					assert.NoError(t, e.Quiescent())
				})
			})
		}
	})
}

// A group's lowered bulkhead sends back its tasks that hold its permit and
// wait for an ancestor's limit. User t/u runs two tasks at its limit of 2.
// Two tasks of t/u/x wait for t/u's limit, holding x's bulkhead of 3. That
// bulkhead is lowered to 1: when t/u's tasks end, one of x's starts, not
// both.
func TestFuzzTreeRegression5(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			policy := func(bulkhead int) *groupconc.GroupPolicy {
				return mustBuild(t, builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2).
					PerGroupMaxInFlight(map[string]int{"t/u/x": bulkhead}))
			}
			e := groupconc.New(policy(3))
			t.Cleanup(func() { _ = e.Close() })
			var ks []*gatedTask
			var hs []*groupconc.TaskHandle[int]
			for _, key := range []string{"t/u", "t/u", "t/u/x", "t/u/x"} {
				k := newGatedTask(t, 1)
				ks, hs = append(ks, k), append(hs, submitGated(t, e, key, "", k, groupconc.SubmitOptions{}))
				synctest.Wait()
			}
			requireWaiting(t, hs[2], ks[2])
			requireWaiting(t, hs[3], ks[3])
			require.NoError(t, e.UpdatePolicy(policy(1)))
			synctest.Wait()
			st, _ := e.GroupStats("t/u/x")
			assert.LessOrEqual(t, st.InFlight, 1, "x's waiting tasks went back to its bulkhead line")
			ks[0].Release()
			ks[1].Release()
			synctest.Wait()
			assert.False(t, ks[2].started.Load() && ks[3].started.Load(), "two of x started under its bulkhead of 1")
			ks[2].Release()
			ks[3].Release()
			quiesce(t, e, hs...)
		})
	})
}

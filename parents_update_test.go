package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Lowering a parent's limit below what its subtree holds interrupts
// nothing, and starts none of its tasks until the subtree is below the new
// limit. That holds for tasks that held the parent's permit while they
// waited at a later layer: the global cap under fair share, a
// grandparent's limit under IsolationOff.
func TestParentLoweredDrains(t *testing.T) {
	for _, c := range []struct {
		mode         groupconc.IsolationMode
		key, blocker string
	}{
		{groupconc.IsolationFairShare, "acme/u1", "other"},
		{groupconc.IsolationOff, "org/acme/u1", "org/other"},
	} {
		t.Run(c.mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				limits := func(acme int) *groupconc.PolicyBuilder {
					b := builder().Isolation(c.mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(4).
						PerGroupMaxConcurrency(map[string]int{"acme": acme, "org/acme": acme})
					if c.mode == groupconc.IsolationFairShare {
						return b.GlobalMaxInFlight(4)
					}
					return b
				}
				e := newExecutor(t, limits(4))
				blockers := []*gatedTask{newGatedTask(t, 0), newGatedTask(t, 0)}
				var hs []*groupconc.TaskHandle[int]
				for _, k := range blockers {
					hs = append(hs, submitGated(t, e, c.blocker, "", k, groupconc.SubmitOptions{}))
				}
				synctest.Wait()
				ks := []*gatedTask{newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3), newGatedTask(t, 4)}
				for _, k := range ks {
					hs = append(hs, submitGated(t, e, c.key, "", k, groupconc.SubmitOptions{}))
				}
				synctest.Wait()
				require.True(t, ks[0].started.Load() && ks[1].started.Load())
				require.False(t, ks[2].started.Load() || ks[3].started.Load(), "2 wait past the tenant's layer")

				require.NoError(t, e.UpdatePolicy(mustBuild(t, limits(1))))
				for _, k := range blockers {
					k.Release()
				}
				synctest.Wait()
				assert.False(t, ks[2].started.Load() || ks[3].started.Load(), "the tenant holds 2 of its new 1")
				ks[0].Release()
				synctest.Wait()
				assert.False(t, ks[2].started.Load() || ks[3].started.Load(), "the tenant holds 1 of its new 1")
				ks[1].Release()
				synctest.Wait()
				assert.True(t, ks[2].started.Load())
				assert.False(t, ks[3].started.Load())
				ks[2].Release()
				synctest.Wait()
				assert.True(t, ks[3].started.Load())
				ks[3].Release()
				quiesce(t, e, hs...)
			})
		})
	}
}

// RejectDiscardOldest makes room in an ancestor's queue too: the oldest of
// the subtree's tasks waiting for the ancestor's limit gives up its slot.
func TestParentQueueDiscardOldest(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, tenants(mode).RejectionPolicy(groupconc.RejectDiscardOldest).
				PerGroupMaxConcurrency(map[string]int{"acme": 1}).PerGroupQueueThreshold(map[string]int{"acme": 1}))
			k1, k2, k3 := newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)
			h1 := submitGated(t, e, "acme/u1", "", k1, groupconc.SubmitOptions{})
			h2 := submitGated(t, e, "acme/u2", "", k2, groupconc.SubmitOptions{})
			synctest.Wait()
			requireWaiting(t, h2, k2)
			h3 := submitGated(t, e, "acme/u3", "", k3, groupconc.SubmitOptions{})
			synctest.Wait()
			r := doneResult(t, h2)
			assert.Equal(t, groupconc.StatusRejected, r.Status)
			var re *groupconc.RejectedError
			require.ErrorAs(t, r.Err, &re)
			assert.Equal(t, groupconc.ReasonDisplaced, re.Reason)
			requireWaiting(t, h3, k3)
			k1.Release()
			synctest.Wait()
			assert.True(t, k3.started.Load())
			k3.Release()
			quiesce(t, e, h1, h3)
		})
	})
}

// A cost-6 task under a tenant limit of 4 adds 4 to the tenant's running
// cost and 6 to its user's, whose limit is 10.
func TestParentRunningCostIsAtItsLimit(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).
				PerGroupMaxConcurrency(map[string]int{"acme": 4}))
			big, small := newGatedTask(t, 1), newGatedTask(t, 2)
			hb := submitGated(t, e, "acme/u1", "", big, groupconc.SubmitOptions{Cost: 6})
			hs := submitGated(t, e, "acme/u2", "", small, groupconc.SubmitOptions{})
			synctest.Wait()
			requireWaiting(t, hs, small)
			acme, _ := e.GroupStats("acme")
			u1, _ := e.GroupStats("acme/u1")
			assert.Equal(t, 4, acme.RunningCost)
			assert.Equal(t, 6, u1.RunningCost)
			assert.Equal(t, 1, acme.Running)
			assert.Equal(t, 1, u1.Running)
			assert.Equal(t, 2, acme.InFlight)
			assert.Equal(t, 1, u1.InFlight)
			inFlight := 6
			if mode == groupconc.IsolationOff {
				inFlight = 7 // u2's task took its global permit first
			}
			assert.Equal(t, inFlight, e.Stats().GlobalInFlight)
			big.Release()
			synctest.Wait()
			acme, _ = e.GroupStats("acme")
			assert.Equal(t, 1, acme.RunningCost)
			small.Release()
			quiesce(t, e, hb, hs)
		})
	})
}

// A task held back by its own group's pause and its tenant's starts only
// once both are resumed.
func TestParentAndChildPaused(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, tenants(mode))
			first := newGatedTask(t, 0)
			first.Release()
			submitGated(t, e, "acme/u1", "", first, groupconc.SubmitOptions{}).Wait()
			on, off := true, false
			require.NoError(t, e.SetGroupOverride("acme", groupconc.GroupOverride{Paused: &on}))
			require.NoError(t, e.SetGroupOverride("acme/u1", groupconc.GroupOverride{Paused: &on}))
			k := newGatedTask(t, 1)
			h := submitGated(t, e, "acme/u1", "", k, groupconc.SubmitOptions{})
			synctest.Wait()
			requireWaiting(t, h, k)
			require.NoError(t, e.SetGroupOverride("acme/u1", groupconc.GroupOverride{Paused: &off}))
			synctest.Wait()
			requireWaiting(t, h, k) // its tenant is paused still
			p, ok := h.Position()
			require.True(t, ok)
			assert.Equal(t, groupconc.WaitPosition{Limit: "paused", Group: "acme"}, p)
			require.NoError(t, e.SetGroupOverride("acme", groupconc.GroupOverride{Paused: &off}))
			synctest.Wait()
			assert.True(t, k.started.Load())
			k.Release()
			quiesce(t, e, h)
		})
	})
}

// At a parent's own limit, its children take turns under fair share: a
// user with a long backlog does not hold back its sibling. Under
// IsolationOff they are served in arrival order.
func TestParentLimitSharedFairlyAmongChildren(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).
				PerGroupMaxConcurrency(map[string]int{"acme": 2}))
			type sub struct {
				user string
				k    *gatedTask
				h    *groupconc.TaskHandle[int]
			}
			var subs []sub
			for _, user := range []string{"u1", "u1", "u1", "u1", "u1", "u1", "u2", "u2", "u2", "u2"} {
				k := newGatedTask(t, 0)
				subs = append(subs, sub{user, k, submitGated(t, e, "acme/"+user, "", k, groupconc.SubmitOptions{})})
			}
			synctest.Wait()
			released := map[int]bool{}
			var order, before []int
			for i, s := range subs {
				if s.k.started.Load() {
					before = append(before, i)
				}
			}
			require.Len(t, before, 2, "acme's limit")
			for range 3 { // end the oldest running task, see who starts next
				for i, s := range subs {
					if s.k.started.Load() && !released[i] {
						released[i] = true
						s.k.Release()
						break
					}
				}
				synctest.Wait()
				for i, s := range subs {
					if s.k.started.Load() && !released[i] && !contains(order, i) && !contains(before, i) {
						order = append(order, i)
					}
				}
			}
			var u2 int
			for _, i := range order {
				if subs[i].user == "u2" {
					u2++
				}
			}
			require.NotEmpty(t, order)
			if mode == groupconc.IsolationFairShare {
				assert.Equal(t, "u2", subs[order[0]].user, "u2, running none, is served before u1's backlog: %v", order)
				assert.GreaterOrEqual(t, u2, 1)
			} else {
				assert.Zero(t, u2, "arrival order: u1's backlog first: %v", order)
			}
			var hs []*groupconc.TaskHandle[int]
			for _, s := range subs {
				s.k.Release()
				hs = append(hs, s.h)
			}
			quiesce(t, e, hs...)
		})
	})
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// UpdatePolicy changes limits, not parents: a group keeps the parent it
// was made with, and a group made after the change gets the new policy's.
// An evicted group is made again under the policy then in force.
func TestUpdatePolicyKeepsParentsOfGroupsMadeBefore(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			tree := builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(4).
				PerGroupMaxConcurrency(map[string]int{"acme": 1})
			flat := builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(4).
				PerGroupMaxConcurrency(map[string]int{"acme": 1})
			e := newExecutor(t, tree)
			a := newGatedTask(t, 1)
			ha := submitGated(t, e, "acme/u1", "", a, groupconc.SubmitOptions{})
			synctest.Wait()
			require.True(t, a.started.Load())

			require.NoError(t, e.UpdatePolicy(mustBuild(t, flat)))
			b := newGatedTask(t, 2)
			hb := submitGated(t, e, "acme/u2", "", b, groupconc.SubmitOptions{})
			synctest.Wait()
			assert.True(t, b.started.Load(), "acme/u2, made without a parent, is not held by acme's limit")
			st1, _ := e.GroupStats("acme/u1")
			st2, _ := e.GroupStats("acme/u2")
			assert.Equal(t, "acme", st1.Parent, "acme/u1 keeps its parent")
			assert.Equal(t, "", st2.Parent)
			x, _ := e.ExplainGroup("acme/u1")
			assert.Equal(t, []string{"acme"}, x.Ancestors)

			require.NoError(t, e.UpdatePolicy(mustBuild(t, tree)))
			st2, _ = e.GroupStats("acme/u2")
			assert.Equal(t, "", st2.Parent, "acme/u2 keeps having none")
			a.Release()
			b.Release()
			quiesce(t, e, ha, hb)

			e.EvictGroup("acme/u2")
			c := newGatedTask(t, 3)
			hc := submitGated(t, e, "acme/u2", "", c, groupconc.SubmitOptions{})
			synctest.Wait()
			st2, _ = e.GroupStats("acme/u2")
			assert.Equal(t, "acme", st2.Parent, "made again under the policy in force")
			c.Release()
			quiesce(t, e, hc)
		})
	})
}

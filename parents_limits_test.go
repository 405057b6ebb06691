package groupconc_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// tenants is a policy of tenants over users ("acme/u1"): tenant limit 3,
// user limit 2, unless overridden per group.
func tenants(mode groupconc.IsolationMode) *groupconc.PolicyBuilder {
	return builder().Isolation(mode).ParentSeparator("/").
		DefaultMaxConcurrencyPerGroup(2).
		PerGroupMaxConcurrency(map[string]int{"acme": 3, "initech": 3})
}

// A subtree runs up to its limit, and a user's waiting task holds none of
// its tenant's capacity: three of u1 and one of u2 run 3 at once.
func TestParentLimitsItsSubtree(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, tenants(mode))
			var ks []*gatedTask
			var hs []*groupconc.TaskHandle[int]
			for _, key := range []string{"acme/u1", "acme/u1", "acme/u1", "acme/u2", "acme/u3"} {
				k := newGatedTask(t, 1)
				ks = append(ks, k)
				hs = append(hs, submitGated(t, e, key, "", k, groupconc.SubmitOptions{}))
			}
			synctest.Wait()
			started := func() (n int) {
				for _, k := range ks {
					if k.started.Load() {
						n++
					}
				}
				return n
			}
			assert.Equal(t, 3, started(), "u1 twice and u2 once: the tenant's 3")
			assert.True(t, ks[0].started.Load() && ks[1].started.Load() && ks[3].started.Load())
			st, ok := e.GroupStats("acme")
			require.True(t, ok, "a parent is a group like any other")
			assert.Equal(t, 3, st.Running, "the subtree's running tasks")
			assert.Equal(t, 2, st.Waiting)
			assert.Equal(t, 3, st.RunningCost)
			assert.Equal(t, 5, st.InFlight, "tasks past the bulkheads, none set")
			u1, _ := e.GroupStats("acme/u1")
			assert.Equal(t, "acme", u1.Parent)
			assert.Equal(t, 2, u1.Running)
			assert.Equal(t, 1, u1.Waiting)

			ks[3].Release() // u2's ends: u1's third waits for u1, so u3's starts
			synctest.Wait()
			assert.True(t, ks[4].started.Load())
			assert.False(t, ks[2].started.Load())
			ks[0].Release()
			synctest.Wait()
			assert.True(t, ks[2].started.Load())
			for _, k := range ks {
				k.Release()
			}
			quiesce(t, e, hs...)
		})
	})
}

// The tenant's limit holds at every instant under a storm of users' tasks
// ending and starting, and every task ends.
func TestParentLimitHoldsUnderLoad(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, tenants(mode).GlobalMaxInFlight(5))
			tenant := map[string]*costGauge{"acme": {}, "initech": {}}
			users := map[string]*costGauge{}
			var hs []*groupconc.TaskHandle[int]
			for i := range 200 {
				tn := []string{"acme", "initech"}[i%2]
				key := fmt.Sprintf("%s/u%d", tn, i%7)
				if users[key] == nil {
					users[key] = &costGauge{}
				}
				c := 1 + i%3
				gs := []*costGauge{tenant[tn], users[key]}
				fn := func(ctx context.Context) (int, error) {
					gs[0].add(int64(c))
					gs[1].add(int64(min(c, 2))) // a cost above a limit takes the limit
					time.Sleep(time.Millisecond)
					gs[0].add(-int64(c))
					gs[1].add(-int64(min(c, 2)))
					return 0, nil
				}
				h, err := groupconc.SubmitWith(context.Background(), e, key, fmt.Sprint(i), fn, groupconc.SubmitOptions{Cost: c})
				require.NoError(t, err)
				hs = append(hs, h)
			}
			for _, h := range hs {
				require.Equal(t, groupconc.StatusSuccess, h.Wait().Status)
			}
			for k, g := range tenant {
				assert.LessOrEqual(t, g.max.Load(), int64(3), k)
			}
			for k, g := range users {
				assert.LessOrEqual(t, g.max.Load(), int64(2), k)
			}
			quiesce(t, e)
		})
	})
}

// ShutdownGroup and EvictGroup of a parent act on its subtree.
func TestParentShutdownAndEvictTheSubtree(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, tenants(mode))
			run, other := []*gatedTask{newGatedTask(t, 1), newGatedTask(t, 1), newGatedTask(t, 1)}, newGatedTask(t, 3)
			var hs []*groupconc.TaskHandle[int]
			for _, k := range run {
				hs = append(hs, submitGated(t, e, "acme/u1", "", k, groupconc.SubmitOptions{}))
			}
			ho := submitGated(t, e, "initech/u1", "", other, groupconc.SubmitOptions{})
			synctest.Wait()
			requireWaiting(t, hs[2], run[2]) // at u1's limit of 2
			e.ShutdownGroup("acme")
			synctest.Wait()
			assert.Equal(t, groupconc.StatusCancelled, doneResult(t, hs[2]).Status, "waiting in the subtree")
			assert.False(t, ho.IsDone(), "another tenant is untouched")
			run[0].Release()
			run[1].Release()
			for _, h := range hs {
				h.Wait()
			}
			_, ok := e.GroupStats("acme/u1")
			assert.True(t, ok)
			e.EvictGroup("acme")
			_, ok = e.GroupStats("acme/u1")
			assert.False(t, ok, "evicting a parent evicts its children")
			_, ok = e.GroupStats("initech/u1")
			assert.True(t, ok)
			other.Release()
			quiesce(t, e, ho)
		})
	})
}

// A parent is remembered while any child is, and forgotten after.
func TestParentRememberedWhileAChildIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, tenants(groupconc.IsolationOff).IdleGroupTTL(time.Minute))
		done := newGatedTask(t, 1)
		done.Release() // it runs to its end at once
		h := submitGated(t, e, "acme/u1", "", done, groupconc.SubmitOptions{})
		h.Wait()
		_, ok := e.GroupStats("acme")
		require.True(t, ok)
		time.Sleep(3 * time.Minute)
		e.Stats()
		_, ok = e.GroupStats("acme/u1")
		assert.False(t, ok, "the idle child is forgotten")
		time.Sleep(3 * time.Minute)
		e.Stats()
		_, ok = e.GroupStats("acme")
		assert.False(t, ok, "then the parent")
		quiesce(t, e)
	})
}

// A group under a paused ancestor is forgotten when idle like any other.
// The paused ancestor is not idle, and stays paused: a child made again
// under it starts nothing.
func TestChildOfAPausedParentIsForgottenWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, tenants(groupconc.IsolationOff).IdleGroupTTL(time.Minute))
		done := newGatedTask(t, 1)
		done.Release() // it runs to its end at once
		h := submitGated(t, e, "acme/u1", "", done, groupconc.SubmitOptions{})
		h.Wait()
		paused := true
		require.NoError(t, e.SetGroupOverride("acme", groupconc.GroupOverride{Paused: &paused}))
		time.Sleep(3 * time.Minute) // the fake clock's
		e.Stats()
		time.Sleep(3 * time.Minute)
		e.Stats()
		_, ok := e.GroupStats("acme/u1")
		assert.False(t, ok, "the idle child is forgotten")
		st, ok := e.GroupStats("acme")
		require.True(t, ok, "a paused parent is not idle")
		assert.True(t, st.Paused)

		k := newGatedTask(t, 2)
		h = submitGated(t, e, "acme/u1", "", k, groupconc.SubmitOptions{})
		synctest.Wait()
		assert.False(t, k.started.Load(), "still under a paused parent")
		require.NoError(t, e.SetGroupOverride("acme", groupconc.GroupOverride{}))
		synctest.Wait()
		assert.True(t, k.started.Load())
		k.Release()
		quiesce(t, e, h)
	})
}

// A chain the policy cannot resolve makes Submit fail, naming it.
func TestParentChainErrorsReachSubmit(t *testing.T) {
	e := newExecutor(t, builder().ParentResolver(func(k string) string {
		if k == "boom" {
			panic("no tenant")
		}
		return map[string]string{"a": "b", "b": "a"}[k]
	}))
	for key, want := range map[string]string{"a": "a", "boom": "no tenant"} {
		_, err := groupconc.Submit(context.Background(), e, key, "t", succeed)
		require.ErrorIs(t, err, groupconc.ErrInvalidPolicy, key)
		assert.ErrorContains(t, err, want, key)
		_, err = groupconc.Do(context.Background(), e, key, succeed, groupconc.SubmitOptions{})
		assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy, key)
	}
	assert.Zero(t, e.Stats().Groups, "no group is made for a bad chain")
	h, err := groupconc.Submit(context.Background(), e, "c", "t", succeed)
	require.NoError(t, err)
	assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status)
}

// A parent's queue threshold bounds its subtree's tasks waiting for its
// limit; one turned away names its own group.
func TestParentQueueThreshold(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, tenants(mode).PerGroupMaxConcurrency(map[string]int{"acme": 1}).PerGroupQueueThreshold(map[string]int{"acme": 1}))
			k, k2 := newGatedTask(t, 1), newGatedTask(t, 2)
			h1 := submitGated(t, e, "acme/u1", "", k, groupconc.SubmitOptions{})
			h2 := submitGated(t, e, "acme/u2", "", k2, groupconc.SubmitOptions{})
			h3 := submitGated(t, e, "acme/u3", "", k, groupconc.SubmitOptions{})
			synctest.Wait()
			requireWaiting(t, h2, k2)
			re := requireRejected(t, h3, "group")
			assert.Equal(t, "acme/u3", re.GroupKey)
			k.Release()
			k2.Release()
			quiesce(t, e, h1, h2)
		})
	})
}

// Pausing a parent holds back its subtree and nothing else.
func TestParentPause(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, tenants(mode).GlobalMaxInFlight(1))
			on, off := true, false
			first := newGatedTask(t, 0)
			first.Release()
			submitGated(t, e, "acme/u1", "", first, groupconc.SubmitOptions{}).Wait()
			require.NoError(t, e.SetGroupOverride("acme", groupconc.GroupOverride{Paused: &on}))
			a, b := newGatedTask(t, 1), newGatedTask(t, 2)
			ha := submitGated(t, e, "acme/u1", "", a, groupconc.SubmitOptions{})
			hb := submitGated(t, e, "initech/u1", "", b, groupconc.SubmitOptions{})
			synctest.Wait()
			requireWaiting(t, ha, a)
			assert.True(t, b.started.Load(), "the paused subtree holds no global permit")
			st, _ := e.GroupStats("acme/u1")
			assert.True(t, st.Paused, "under a paused ancestor")
			b.Release()
			synctest.Wait()
			requireWaiting(t, ha, a)
			require.NoError(t, e.SetGroupOverride("acme", groupconc.GroupOverride{Paused: &off}))
			synctest.Wait()
			assert.True(t, a.started.Load())
			a.Release()
			quiesce(t, e, ha, hb)
		})
	})
}

// costGauge records the most permits held at once.
type costGauge struct{ cur, max atomic.Int64 }

func (g *costGauge) add(n int64) {
	v := g.cur.Add(n)
	for m := g.max.Load(); v > m && !g.max.CompareAndSwap(m, v); m = g.max.Load() {
	}
}

// Block waits for a slot of an ancestor's full queue too: with no slots
// (threshold 0) until its tasks may start, with one until it frees.
func TestParentQueueFullUnderBlock(t *testing.T) {
	for _, threshold := range []int{0, 1} {
		forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, tenants(mode).PerGroupMaxConcurrency(map[string]int{"acme": 1}).
					PerGroupQueueThreshold(map[string]int{"acme": threshold}))
				ks := []*gatedTask{newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)}
				hs := []*groupconc.TaskHandle[int]{submitGated(t, e, "acme/u1", "", ks[0], groupconc.SubmitOptions{})}
				if threshold == 1 {
					hs = append(hs, submitGated(t, e, "acme/u2", "", ks[1], groupconc.SubmitOptions{}))
				}
				submitted := make(chan *groupconc.TaskHandle[int])
				go func() {
					h, err := groupconc.SubmitWith(context.Background(), e, "acme/u3", "blocked", ks[2].Fn, groupconc.SubmitOptions{Block: true})
					assert.NoError(t, err)
					submitted <- h
				}()
				synctest.Wait()
				select {
				case <-submitted:
					t.Fatal("Block returned while acme's queue is full")
				default:
				}
				st, _ := e.GroupStats("acme/u3")
				assert.Equal(t, 1, st.Blocked)
				ks[0].Release()
				h := <-submitted
				synctest.Wait()
				if threshold == 1 {
					assert.True(t, ks[1].started.Load())
					requireWaiting(t, h, ks[2])
					ks[1].Release()
					synctest.Wait()
				}
				assert.True(t, ks[2].started.Load())
				ks[2].Release()
				quiesce(t, e, append(hs, h)...)
			})
		})
	}
}

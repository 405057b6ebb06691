package groupconc_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A raised global limit lets the waiting tasks walk on in their order. Two
// of them of one group walk one after the other (turn.go), so the second
// must not fall behind a task of another group submitted after it: under
// IsolationOff a parent's line is first come, first served.
func TestARaisedLimitKeepsTheOrderAtAParentsLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := func(global int) *groupconc.PolicyBuilder {
			return groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationOff).ParentSeparator("/").
				GlobalMaxInFlight(global).PerGroupMaxConcurrency(map[string]int{"t": 1})
		}
		e := newExecutor(t, b(1))
		g := upNewGated()
		g.submit(t, e, "t/r", "r") // holds the global permit and t's
		var order []string
		ids := []string{"a", "b", "c", "d"}
		var hs []*groupconc.TaskHandle[int]
		for i, key := range []string{"t", "t/u1", "t", "t/u2"} {
			id := ids[i]
			hs = append(hs, submit(t, t.Context(), e, key, id, func(context.Context) (int, error) {
				order = append(order, id) // one at a time: t's limit is 1
				return 0, nil
			}))
			time.Sleep(time.Second) // fake clock
		}
		upUpdate(t, e, b(10))
		synctest.Wait()
		for i, h := range hs {
			pos, ok := h.Position()
			require.True(t, ok, ids[i])
			assert.Equal(t, groupconc.WaitPosition{Limit: "concurrency", Group: "t", Ahead: i}, pos, ids[i])
		}
		assert.Equal(t, 4*time.Second, groupStats(t, e, "t").OldestWait)
		g.release("r")
		for _, h := range hs {
			h.Wait()
		}
		assert.Equal(t, ids, order)
		g.finish(t, e)
	})
}

// The same where one costly task's release hands its permits to several
// waiters at once: two of them of one group walk one after the other, and
// a task of a sibling group between them in the global line reaches their
// parent's line between them too.
func TestACostlyReleaseKeepsTheOrderAtAParentsLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationOff).ParentSeparator("/").
			GlobalMaxInFlight(4).PerGroupMaxConcurrency(map[string]int{"t": 1}))
		g := upNewGated()
		g.submitWith(t, e, "z", "r", groupconc.SubmitOptions{Cost: 3}) // three global permits
		g.submit(t, e, "t/x", "x")                                     // the fourth, and t's
		var order []string
		ids := []string{"a", "b", "c"}
		var hs []*groupconc.TaskHandle[int]
		for i, key := range []string{"t", "t/u", "t"} {
			id := ids[i]
			hs = append(hs, submit(t, t.Context(), e, key, id, func(context.Context) (int, error) {
				order = append(order, id) // one at a time: t's limit is 1
				return 0, nil
			}))
			time.Sleep(time.Second) // fake clock
		}
		g.release("r") // a, b and c are handed a global permit each
		for i, h := range hs {
			pos, ok := h.Position()
			require.True(t, ok, ids[i])
			assert.Equal(t, groupconc.WaitPosition{Limit: "concurrency", Group: "t", Ahead: i}, pos, ids[i])
		}
		g.release("x")
		for _, h := range hs {
			h.Wait()
		}
		assert.Equal(t, ids, order)
		g.finish(t, e)
	})
}

// The same where the costly task ends by runtime.Goexit: the goroutine
// unwinding cannot carry the handed tasks on, so one goroutine carries
// them all, in order, rather than one each.
func TestACostlyTasksGoexitKeepsTheOrderAtAParentsLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationOff).ParentSeparator("/").
			GlobalMaxInFlight(4).PerGroupMaxConcurrency(map[string]int{"t": 1}))
		g := upNewGated()
		exit := make(chan struct{})
		_, err := groupconc.SubmitWith(t.Context(), e, "z", "r", func(context.Context) (int, error) {
			<-exit
			runtime.Goexit()
			return 0, nil
		}, groupconc.SubmitOptions{Cost: 3})
		require.NoError(t, err)
		g.submit(t, e, "t/x", "x") // the fourth global permit, and t's
		var order []string
		ids := []string{"a", "b", "c"}
		var hs []*groupconc.TaskHandle[int]
		for i, key := range []string{"t", "t/u", "t"} {
			id := ids[i]
			hs = append(hs, submit(t, t.Context(), e, key, id, func(context.Context) (int, error) {
				order = append(order, id)
				return 0, nil
			}))
			time.Sleep(time.Second) // fake clock
		}
		close(exit)
		synctest.Wait()
		for i, h := range hs {
			pos, ok := h.Position()
			require.True(t, ok, ids[i])
			assert.Equal(t, i, pos.Ahead, ids[i])
		}
		g.release("x")
		for _, h := range hs {
			h.Wait()
		}
		assert.Equal(t, ids, order)
		g.finish(t, e)
	})
}

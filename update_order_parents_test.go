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
		l := submitToParentLine(t, e, "t", "t/u1", "t", "t/u2")
		upUpdate(t, e, b(10))
		synctest.Wait()
		l.waitInOrder(t)
		assert.Equal(t, 4*time.Second, groupStats(t, e, "t").OldestWait)
		g.release("r")
		l.ranInOrder(t)
		g.finish(t, e)
	})
}

// The same where one costly task's release hands its permits to several
// waiters at once: two of them of one group walk one after the other, and
// a task of a sibling group between them in the global line reaches their
// parent's line between them too.
func TestACostlyReleaseKeepsTheOrderAtAParentsLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, costlyOrderPolicy())
		g := upNewGated()
		g.submitWith(t, e, "z", "r", groupconc.SubmitOptions{Cost: 3}) // three global permits
		g.submit(t, e, "t/x", "x")                                     // the fourth, and t's
		l := submitToParentLine(t, e, "t", "t/u", "t")
		g.release("r") // a, b and c are handed a global permit each
		l.waitInOrder(t)
		g.release("x")
		l.ranInOrder(t)
		g.finish(t, e)
	})
}

// The same where the costly task ends by runtime.Goexit: the goroutine
// unwinding cannot carry the handed tasks on, so one goroutine carries
// them all, in order, rather than one each.
func TestACostlyTasksGoexitKeepsTheOrderAtAParentsLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, costlyOrderPolicy())
		g := upNewGated()
		exit := make(chan struct{})
		_, err := groupconc.SubmitWith(t.Context(), e, "z", "r", func(context.Context) (int, error) {
			<-exit
			runtime.Goexit()
			return 0, nil
		}, groupconc.SubmitOptions{Cost: 3})
		require.NoError(t, err)
		g.submit(t, e, "t/x", "x") // the fourth global permit, and t's
		l := submitToParentLine(t, e, "t", "t/u", "t")
		close(exit)
		synctest.Wait()
		l.waitInOrder(t)
		g.release("x")
		l.ranInOrder(t)
		g.finish(t, e)
	})
}

// costlyOrderPolicy is the policy of the costly tests: IsolationOff, a
// global cap of 4, and "t" over its children with a limit of 1.
func costlyOrderPolicy() *groupconc.PolicyBuilder {
	return groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationOff).ParentSeparator("/").
		GlobalMaxInFlight(4).PerGroupMaxConcurrency(map[string]int{"t": 1})
}

// parentLine is tasks of "t" and its children, whose line has a limit of
// 1, submitted a second apart, each noting when it starts.
type parentLine struct {
	ids, order []string
	hs         []*groupconc.TaskHandle[int]
}

func submitToParentLine(t *testing.T, e *groupconc.GroupExecutor, keys ...string) *parentLine {
	t.Helper()
	l := new(parentLine)
	for i, key := range keys {
		id := string(rune('a' + i))
		l.ids = append(l.ids, id)
		l.hs = append(l.hs, submit(t, t.Context(), e, key, id, func(context.Context) (int, error) {
			l.order = append(l.order, id) // one at a time: t's limit is 1
			return 0, nil
		}))
		time.Sleep(time.Second) // fake clock
	}
	return l
}

// waitInOrder checks that the tasks wait in t's line in the order they
// were submitted.
func (l *parentLine) waitInOrder(t *testing.T) {
	t.Helper()
	for i, h := range l.hs {
		pos, ok := h.Position()
		require.True(t, ok, l.ids[i])
		assert.Equal(t, groupconc.WaitPosition{Limit: "concurrency", Group: "t", Ahead: i}, pos, l.ids[i])
	}
}

// ranInOrder waits for the tasks and checks they started in that order.
func (l *parentLine) ranInOrder(t *testing.T) {
	t.Helper()
	for _, h := range l.hs {
		h.Wait()
	}
	assert.Equal(t, l.ids, l.order)
}

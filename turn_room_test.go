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

// TestANewTaskTakesItsGroupsLimitBesideItsGroupsWalker: A and A2 of g run,
// and B of g waits for a limit they hold. A ends and hands B its permit.
// B walks on to g's concurrency limit of 2 once A's listener returns. In
// that listener A2 ends. g's limit then has room for B and one more, and
// only g's tasks take it. So a new task of g takes one beside B and runs
// at once, overtaking nobody: a Do with a deadline, and a task of a group
// whose queue threshold is 0. On old code it waited for B's turn: the Do
// until its deadline, and the task, with no slot to wait on, was turned
// away. B waits for g's bulkhead, or under IsolationOff for the global
// cap, which X of another group fills with A and A2. (A group's threshold
// of 0 lets B wait for nothing else.)
func TestANewTaskTakesItsGroupsLimitBesideItsGroupsWalker(t *testing.T) {
	bulkhead := func(mode groupconc.IsolationMode) *groupconc.PolicyBuilder {
		return groupconc.NewPolicyBuilder().Isolation(mode).DefaultMaxInFlightPerGroup(2).DefaultMaxConcurrencyPerGroup(2)
	}
	global := func(mode groupconc.IsolationMode) *groupconc.PolicyBuilder {
		return groupconc.NewPolicyBuilder().Isolation(mode).GlobalMaxInFlight(3).DefaultMaxConcurrencyPerGroup(2)
	}
	off := groupconc.IsolationOff
	for _, c := range []struct {
		name string
		mode groupconc.IsolationMode
		b    *groupconc.PolicyBuilder
		do   bool
		bAt  string // the limit B waits for
	}{
		{"Do, B at the bulkhead, off", off, bulkhead(off), true, "bulkhead"},
		{"Do, B at the bulkhead, fair share", groupconc.IsolationFairShare, bulkhead(groupconc.IsolationFairShare), true, "bulkhead"},
		{"Do, B at the global cap, off", off, global(off), true, "global"},
		{"threshold 0, B at the global cap, off", off, global(off).PerGroupQueueThreshold(map[string]int{"g": 0}), false, "global"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { turnRoomRun(t, c.b, c.do, c.bAt) })
		})
	}
}

func turnRoomRun(t *testing.T, b *groupconc.PolicyBuilder, do bool, bAt string) {
	type out struct {
		v   int
		err error
	}
	got := make(chan out, 1)
	var ex *groupconc.GroupExecutor
	gates := map[string]chan struct{}{}
	hs := map[string]*groupconc.TaskHandle[int]{}
	l := groupconc.ListenerFuncs{
		Completed: func(_, id string, _ groupconc.GroupResult[any]) {
			if id != "A" {
				return
			}
			close(gates["A2"])
			hs["A2"].Wait() // A2 frees its permits
			fn := func(context.Context) (int, error) { return 7, nil }
			if do {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				v, err := groupconc.Do(ctx, ex, "g", fn, groupconc.SubmitOptions{})
				got <- out{v, err}
				return
			}
			c, err := groupconc.Submit(t.Context(), ex, "g", "C", fn)
			if err != nil {
				got <- out{0, err}
				return
			}
			r := c.Wait()
			got <- out{r.Value, r.Err}
		},
	}
	ex = groupconc.New(mustBuild(t, b.TaskLifecycleListener(l)))
	pre := [][2]string{{"g", "A"}, {"g", "A2"}, {"x", "X"}, {"g", "B"}}
	if bAt != "global" {
		pre = [][2]string{{"g", "A"}, {"g", "A2"}, {"g", "B"}}
	}
	for _, k := range pre {
		gates[k[1]] = make(chan struct{})
		h, err := groupconc.Submit(t.Context(), ex, k[0], k[1], gated(gates[k[1]], 1))
		require.NoError(t, err)
		hs[k[1]] = h
	}
	synctest.Wait()
	pos, ok := hs["B"].Position()
	require.True(t, ok)
	require.Equal(t, bAt, pos.Limit, "where B waits")
	close(gates["A"])
	o := <-got
	require.NoError(t, o.err, "the new task waited with a permit free for it and for B")
	assert.Equal(t, 7, o.v)
	synctest.Wait()
	gs, _ := ex.GroupStats("g")
	assert.Equal(t, 1, gs.Running, "B runs")
	for id, gate := range gates {
		if id != "A" && id != "A2" {
			close(gate)
		}
	}
	for id, h := range hs {
		assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, id)
	}
	synctest.Wait()
	st := ex.Stats()
	assert.Equal(t, st.Submitted, st.Succeeded)
	assert.NoError(t, ex.Quiescent())
	require.NoError(t, ex.Shutdown(t.Context()))
}

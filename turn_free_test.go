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

// TestAListenersDoTakesAFreePermitItsGroupsWalkerIsPast: B is handed A1's
// permit, and walks on once A1's listener returns. A2 ends meanwhile and
// frees the group's other permit. B holds every permit it needs, so a Do
// in the listener overtakes nobody by taking the free one. It runs at once.
// On old code it waited for B's turn, for good but for its deadline.
// Under IsolationFairShare B walks on to the global cap after g's limit.
// Then the Do waits for B's turn still (see yields in turn.go).
func TestAListenersDoTakesAFreePermitItsGroupsWalkerIsPast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { turnFreeRun(t, groupconc.IsolationOff) })
}

func turnFreeRun(t *testing.T, mode groupconc.IsolationMode) {
	type out struct {
		v   int
		err error
	}
	got := make(chan out, 1)
	var ex *groupconc.GroupExecutor
	var a2 *groupconc.TaskHandle[int]
	gateA1, gateA2, gateB := make(chan struct{}), make(chan struct{}), make(chan struct{})
	l := groupconc.ListenerFuncs{
		Completed: func(_, id string, _ groupconc.GroupResult[any]) {
			if id != "A1" {
				return
			}
			close(gateA2)
			a2.Wait() // A2 frees its permit: nobody waits in g's line
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			v, err := groupconc.Do(ctx, ex, "g", func(context.Context) (int, error) { return 7, nil }, groupconc.SubmitOptions{})
			got <- out{v, err}
		},
	}
	ex = groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).
		GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(2).TaskLifecycleListener(l)))
	submit := func(id string, gate chan struct{}, v int) *groupconc.TaskHandle[int] {
		h, err := groupconc.SubmitWith(t.Context(), ex, "g", id, gated(gate, v), groupconc.SubmitOptions{})
		require.NoError(t, err)
		return h
	}
	a1 := submit("A1", gateA1, 1)
	a2 = submit("A2", gateA2, 2)
	b := submit("B", gateB, 3)
	synctest.Wait()
	close(gateA1) // A1's permit goes to B, which walks on once A1's listener returns
	o := <-got
	require.NoError(t, o.err, "the Do waited with a permit free")
	assert.Equal(t, 7, o.v)
	assert.Equal(t, 1, a1.Wait().Value)
	close(gateB)
	assert.Equal(t, 3, b.Wait().Value)
	synctest.Wait()
	assert.NoError(t, ex.Quiescent())
	require.NoError(t, ex.Shutdown(t.Context()))
}

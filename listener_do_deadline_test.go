package groupconc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A listener's Do can wait for a task of its group handed a permit. That
// task walks on only once the listener returns. So the Do waits for its
// group's turn, in no line. These tests end that wait from outside.

// listenerDoStop is how the test ends the Do, and what the Do returns.
type listenerDoStop struct {
	name    string
	nested  bool // the Do is in OnSubmitted of a task OnCompleted submits
	timeout bool // the Do's ctx has a deadline; else stop ends it
	stop    func(e *groupconc.GroupExecutor)
	wantErr error
}

var listenerDoStops = []listenerDoStop{
	{name: "deadline in OnCompleted", timeout: true, wantErr: context.DeadlineExceeded},
	{name: "deadline in nested OnSubmitted", nested: true, timeout: true, wantErr: context.DeadlineExceeded},
	{name: "ShutdownGroup", stop: func(e *groupconc.GroupExecutor) { e.ShutdownGroup("g") }, wantErr: groupconc.ErrGroupShutdown},
	{name: "EvictGroup", stop: func(e *groupconc.GroupExecutor) { e.EvictGroup("g") }, wantErr: groupconc.ErrGroupEvicted},
	{name: "Close", stop: func(e *groupconc.GroupExecutor) { _ = e.Close() }, wantErr: groupconc.ErrClosed},
}

// TestAListenersDoStopsWaitingForItsGroupsTurn: the Do returns its
// ctx's error, or the stop's, and fn never runs. The task it waited for
// then runs, and every count adds up.
func TestAListenersDoStopsWaitingForItsGroupsTurn(t *testing.T) {
	for _, c := range listenerDoStops {
		t.Run(c.name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) { listenerDoStopRun(t, mode, c) })
			})
		})
	}
}

func listenerDoStopRun(t *testing.T, mode groupconc.IsolationMode, c listenerDoStop) {
	var e atomic.Pointer[groupconc.GroupExecutor]
	var ran atomic.Bool
	doErr := make(chan error, 1)
	sideDone := make(chan struct{})
	do := func() {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if c.timeout {
			ctx, cancel = context.WithTimeout(ctx, time.Second)
		}
		defer cancel()
		_, err := groupconc.Do(ctx, e.Load(), "g", func(context.Context) (int, error) { ran.Store(true); return 1, nil }, groupconc.SubmitOptions{})
		doErr <- err
	}
	l := groupconc.ListenerFuncs{
		Submitted: func(_, id string) {
			if id == "S" {
				do()
			}
		},
		Completed: func(_, id string, _ groupconc.GroupResult[any]) {
			switch {
			case id != "A":
			case c.nested:
				h, err := groupconc.SubmitWith(context.Background(), e.Load(), "side", "S", func(context.Context) (int, error) { return 0, nil }, groupconc.SubmitOptions{})
				if assert.NoError(t, err) {
					go func() { h.Wait(); close(sideDone) }()
				}
			default:
				do()
			}
		},
	}
	ex := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).
		GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(1).TaskLifecycleListener(l)))
	e.Store(ex)
	gate := make(chan struct{})
	a, err := groupconc.SubmitWith(t.Context(), ex, "g", "A", gated(gate, 1), groupconc.SubmitOptions{})
	require.NoError(t, err)
	b, err := groupconc.SubmitWith(t.Context(), ex, "g", "B", gated(gate, 2), groupconc.SubmitOptions{})
	require.NoError(t, err)
	synctest.Wait()
	close(gate) // A ends: its permit goes to B, which walks on once A's listener returns
	synctest.Wait()
	select {
	case err := <-doErr:
		t.Fatalf("the Do returned %v before it was stopped", err)
	default:
	}
	if c.stop != nil {
		go c.stop(ex)
	}
	err = <-doErr // on old code, a deadlock: synctest panics
	assert.ErrorIs(t, err, c.wantErr)
	assert.False(t, ran.Load(), "fn never ran")
	assert.Equal(t, 1, a.Wait().Value)
	res := b.Wait()
	if c.stop == nil {
		assert.Equal(t, groupconc.StatusSuccess, res.Status, "B ran after the listener")
	}
	if c.nested {
		<-sideDone
	}
	synctest.Wait()
	if c.stop == nil {
		st := ex.Stats()
		assert.Equal(t, uint64(1), st.Cancelled, "the Do ended CANCELLED")
		assert.Equal(t, st.Submitted, st.Succeeded+st.Failed+st.Cancelled+st.Rejected)
		assert.Zero(t, st.GlobalInFlight)
	}
	assert.NoError(t, ex.Quiescent())
	require.NoError(t, ex.Shutdown(t.Context()))
}

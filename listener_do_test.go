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

// TestDoInEveryListenerCallbackRuns calls Do from each callback of the
// listener, on every route a callback is called from. None may deadlock.
func TestDoInEveryListenerCallbackRuns(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, rp := range []groupconc.RejectionPolicy{groupconc.RejectAbort, groupconc.RejectCallerRuns, groupconc.RejectDiscardOldest} {
			t.Run(rp.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { listenerDoRun(t, mode, rp) })
			})
		}
	})
}

func listenerDoRun(t *testing.T, mode groupconc.IsolationMode, rp groupconc.RejectionPolicy) {
	var e atomic.Pointer[groupconc.GroupExecutor]
	var dos, ran atomic.Int64
	side := func(g string) {
		if g == "side" || e.Load() == nil {
			return
		}
		dos.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		v, err := groupconc.Do(ctx, e.Load(), "side", func(context.Context) (int, error) { ran.Add(1); return 1, nil }, groupconc.SubmitOptions{Cost: 2})
		assert.NoError(t, err, "a Do from a listener of %s", g)
		assert.Equal(t, 1, v)
	}
	l := groupconc.ListenerFuncs{
		Submitted: func(g, _ string) { side(g) },
		Started:   func(g, _ string) { side(g) },
		Completed: func(g, _ string, _ groupconc.GroupResult[any]) { side(g) },
		Rejected:  func(g, _, _ string) { side(g) },
	}
	p := mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).ParentSeparator("/").
		GlobalMaxInFlight(16).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1).
		PerGroupMaxConcurrency(map[string]int{"side": 4, "t": 4}).PerGroupQueueThreshold(map[string]int{"t": 4}).
		RejectionPolicy(rp).TaskLifecycleListener(l))
	ex := groupconc.New(p)
	e.Store(ex)
	gate := make(chan struct{})
	fn := gated(gate, 1)
	var hs []*groupconc.TaskHandle[int]
	for i := range 4 { // one runs, one waits, the rest are turned away
		h, err := groupconc.SubmitWith(t.Context(), ex, "t/a", fmt.Sprint("s", i), fn, groupconc.SubmitOptions{Cost: 1})
		if err == nil {
			hs = append(hs, h)
		}
	}
	synctest.Wait()
	hs[len(hs)-1].Cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := groupconc.ExecuteAll(t.Context(), ex, []groupconc.GroupTask[int]{{GroupKey: "t/b", TaskID: "x", Task: fn}})
		assert.NoError(t, err)
		assert.Equal(t, groupconc.StatusSuccess, res[0].Status)
	}()
	go func() { _, _ = groupconc.Do(t.Context(), ex, "t", fn, groupconc.SubmitOptions{}) }()
	synctest.Wait()
	close(gate)
	<-done
	for _, h := range hs {
		h.Wait()
	}
	synctest.Wait()
	require.NoError(t, ex.Shutdown(t.Context()))
	assert.Equal(t, dos.Load(), ran.Load(), "every Do from a listener ran")
	assert.NotZero(t, dos.Load())
	assert.NoError(t, ex.Quiescent())
}

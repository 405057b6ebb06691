package groupconc_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A blocked caller handed a slot, whose OnSubmitted calls Goexit (or which
// Goexits in a pressure function): the slot is not lost; the caller behind
// it is still served; Shutdown drains.
func TestAGoexitOfABlockedCallerAsItIsAcceptedLosesNoSlot(t *testing.T) {
	for _, via := range []string{"submitted", "pressure"} {
		for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
			t.Run(via+"/"+mode.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var armed atomic.Bool
					l := groupconc.ListenerFuncs{Submitted: func(_, id string) {
						if id == "x" && via == "submitted" {
							runtime.Goexit()
						}
					}}
					b := builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1).TaskLifecycleListener(l)
					if via == "pressure" {
						b = b.PressureWarnings(groupconc.PressureConfig{BacklogCount: 1, Cooldown: time.Nanosecond}, func(groupconc.PressureWarning) {
							if armed.Load() {
								runtime.Goexit()
							}
						})
					}
					e := groupconc.New(mustBuild(t, b))
					hold := newGatedTask(t, 1)
					hh := submitGated(t, e, "a", "hold", hold, groupconc.SubmitOptions{})
					w := newGatedTask(t, 2)
					hw := submitGated(t, e, "a", "w", w, groupconc.SubmitOptions{})
					synctest.Wait()
					armed.Store(true)
					xdone := make(chan struct{})
					go func() {
						defer close(xdone)
						_, _ = groupconc.SubmitWith(context.Background(), e, "a", "x", succeed, groupconc.SubmitOptions{Block: true})
					}()
					synctest.Wait()
					ydone := make(chan *groupconc.TaskHandle[int], 1)
					go func() {
						h, err := groupconc.SubmitWith(context.Background(), e, "a", "y", succeed, groupconc.SubmitOptions{Block: true})
						if err != nil {
							t.Error(err)
						}
						ydone <- h
					}()
					synctest.Wait()
					gs, _ := e.GroupStats("a")
					require.Equal(t, 2, gs.Blocked)
					hold.Release() // w starts, its slot goes to x, whose caller Goexits
					synctest.Wait()
					<-xdone
					armed.Store(false)
					w.Release() // x's task (if accepted) runs; then y gets a slot
					hh.Wait()
					hw.Wait()
					synctest.Wait()
					var hy *groupconc.TaskHandle[int]
					select {
					case hy = <-ydone:
					default:
						gs, _ := e.GroupStats("a")
						t.Fatalf("the caller behind the one that Goexited is still blocked: %+v", gs)
					}
					assert.Equal(t, groupconc.StatusSuccess, hy.Wait().Status)
					synctest.Wait()
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					assert.NoError(t, e.Shutdown(ctx))
					assert.NoError(t, e.Quiescent())
					s := e.Stats()
					assert.Equal(t, s.Submitted, s.Succeeded+s.Failed+s.Cancelled+s.Rejected, "%+v", s)
					require.NoError(t, e.Close())
				})
			})
		}
	}
}

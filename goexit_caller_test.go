package groupconc_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On the submitting goroutine, a listener (OnSubmitted, or
// OnRejected for a task turned away inside Submit) or a pressure function
// that calls runtime.Goexit (t.FailNow) kills the caller of Submit. The task
// must not be left counted in: Shutdown drains, permits and slots come back.
func TestAGoexitOnTheSubmittingGoroutineStrandsNothing(t *testing.T) {
	for _, where := range []string{"submitted", "rejected", "pressure"} {
		for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
			t.Run(where+"/"+mode.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					l := groupconc.ListenerFuncs{}
					b := builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1)
					switch where {
					case "submitted":
						l.Submitted = func(_, id string) {
							if id == "x" {
								runtime.Goexit()
							}
						}
					case "rejected":
						b = b.DefaultQueueThresholdPerGroup(0)
						l.Rejected = func(_, id, _ string) {
							if id == "x" {
								runtime.Goexit()
							}
						}
					case "pressure":
						b = b.PressureWarnings(groupconc.PressureConfig{BacklogCount: 1}, func(w groupconc.PressureWarning) { runtime.Goexit() })
					}
					e := groupconc.New(mustBuild(t, b.TaskLifecycleListener(l)))
					hold := newGatedTask(t, 1)
					hh := submitGated(t, e, "a", "hold", hold, groupconc.SubmitOptions{})
					synctest.Wait()
					returned := make(chan struct{})
					go func() {
						_, _ = groupconc.Submit(context.Background(), e, "a", "x", succeed)
						close(returned)
					}()
					synctest.Wait()
					select {
					case <-returned:
						t.Log("Submit returned (no Goexit reached the caller)")
					default:
						t.Log("the caller of Submit was ended by Goexit")
					}
					hold.Release()
					hh.Wait()
					synctest.Wait()
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					start := time.Now()
					err := e.Shutdown(ctx)
					assert.NoError(t, err, "Shutdown waited %v for a task stranded by the Goexit", time.Since(start))
					assert.NoError(t, e.Quiescent())
					s := e.Stats()
					assert.Equal(t, s.Submitted, s.Succeeded+s.Failed+s.Cancelled+s.Rejected, "%+v", s)
					require.NoError(t, e.Close())
				})
			})
		}
	}
}

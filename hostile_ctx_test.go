package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// afterFuncPanics is a caller's context whose AfterFunc, which
// context.AfterFunc calls, panics.
type afterFuncPanics struct{ context.Context }

func (afterFuncPanics) Value(any) any                { return nil }
func (afterFuncPanics) AfterFunc(func()) func() bool { panic("AfterFunc failed") }

// A caller's context that panics as Submit hooks the task to it: the
// panic goes on up from Submit, and no lock is left held. The task was in
// its line by then, so it runs, and the executor shuts down.
func TestACallersContextWhoseAfterFuncPanicsLeavesNoLockHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(1))
		hold := newGatedTask(t, 0)
		h0 := submit(t, t.Context(), e, "a", "hold", hold.Fn)
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		assert.PanicsWithValue(t, "AfterFunc failed", func() {
			groupconc.Submit(afterFuncPanics{ctx}, e, "a", "hooked", succeed)
		})
		hold.Release()
		h0.Wait()
		require.NoError(t, e.Shutdown(t.Context()))
		assert.Equal(t, uint64(2), e.Stats().Succeeded)
	})
}

// errPanics is a caller's context whose Err panics once it has ended.
type errPanics struct{ context.Context }

func (c errPanics) Err() error {
	if c.Context.Err() != nil {
		panic("Err failed")
	}
	return nil
}

// A blocked caller whose context panics as its wait ends lets go of all it
// held first: the panic goes on up from SubmitWith, and the executor
// counts no blocked caller and shuts down.
func TestABlockedCallersContextWhoseErrPanicsLeavesNothingHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
		hold := newGatedTask(t, 0)
		h0 := submit(t, t.Context(), e, "a", "hold", hold.Fn)
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		recovered := make(chan any)
		go func() {
			defer func() { recovered <- recover() }()
			groupconc.SubmitWith(errPanics{ctx}, e, "a", "blocked", succeed, groupconc.SubmitOptions{Block: true})
		}()
		synctest.Wait()
		gs, _ := e.GroupStats("a")
		require.Equal(t, 1, gs.Blocked)
		cancel()
		assert.Equal(t, "Err failed", <-recovered)
		gs, _ = e.GroupStats("a")
		assert.Equal(t, 0, gs.Blocked)
		hold.Release()
		h0.Wait()
		require.NoError(t, e.Shutdown(t.Context()))
		assert.Equal(t, uint64(1), e.Stats().Succeeded)
	})
}

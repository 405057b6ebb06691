package groupconc_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Two first uses of a key race, and the resolver ends the goroutine of the
// first (runtime.Goexit, as a test's t.FailNow does). The second caller's
// Submit still returns, with its group made, and the key works after.
func TestARacingFirstUseOutlivesAResolverThatEndsAnotherCallersGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		gate := make(chan struct{})
		e := groupconc.New(mustBuild(t, builder().ConcurrencyResolver(func(string) int {
			if calls.Add(1) == 1 {
				<-gate
				runtime.Goexit()
			}
			return 1
		})))
		go func() { _, _ = groupconc.Submit(context.Background(), e, "k", "first", succeed) }()
		synctest.Wait() // the first caller is in the resolver
		var returned atomic.Bool
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			h, err := groupconc.Submit(context.Background(), e, "k", "second", succeed)
			returned.Store(true)
			if assert.NoError(t, err) {
				h.Wait()
			}
		}()
		synctest.Wait()
		close(gate)
		<-exited
		assert.True(t, returned.Load(), "the second caller's goroutine ended inside Submit")
		h, err := groupconc.Submit(context.Background(), e, "k", "third", succeed)
		require.NoError(t, err)
		assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, e.Shutdown(ctx))
		assert.NoError(t, e.Quiescent())
	})
}

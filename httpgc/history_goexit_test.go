package httpgc_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// A DisplayKey that calls runtime.Goexit while a sample is taken ends that
// sample alone: the next comes an Interval later, and the history goes on.
func TestADisplayKeyThatExitsEndsOneSampleOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())
		runTied(t, e)
		var exited atomic.Bool
		h, err := httpgc.New(e, httpgc.Options{DisplayKey: func(k string) string {
			// The first sample compares a and b by name: they tie.
			if exited.CompareAndSwap(false, true) {
				runtime.Goexit()
			}
			return k
		}})
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		time.Sleep(5*time.Second + 500*time.Millisecond)
		synctest.Wait()
		require.True(t, exited.Load())
		assert.Len(t, rowOf(t, h, "a")["history"], 5, "a sample a second from 1s on")
	})
}

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

// A resolver that Goexits while UpdatePolicy or SetGroupOverride resolves
// live groups again ends that caller; no lock may be left held: later
// calls, Submits and Shutdown still return.
func TestAGoexitInAResolverDuringAChangeLeavesNoLockHeld(t *testing.T) {
	for _, via := range []string{"update", "override"} {
		t.Run(via, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var armed atomic.Bool
				res := func(k string) int {
					if armed.Load() {
						armed.Store(false)
						runtime.Goexit()
					}
					return 1
				}
				p := mustBuild(t, builder().ConcurrencyResolver(res))
				e := groupconc.New(p)
				h, err := groupconc.Submit(context.Background(), e, "k", "a", succeed)
				require.NoError(t, err)
				h.Wait()
				armed.Store(true)
				done := make(chan struct{})
				go func() {
					defer close(done)
					if via == "update" {
						_ = e.UpdatePolicy(mustBuild(t, builder().ConcurrencyResolver(res)))
					} else {
						two := 2
						_ = e.SetGroupOverride("k", groupconc.GroupOverride{MaxInFlight: &two})
						_ = e.SetGroupOverride("k", groupconc.GroupOverride{})
					}
				}()
				<-done
				require.False(t, armed.Load(), "the resolver was not called")
				synctest.Wait()
				finished := make(chan struct{})
				go func() {
					ok := false
					defer func() {
						close(finished)
						if !ok {
							t.Error("the checking goroutine did not finish normally")
						}
					}()
					assert.NoError(t, e.UpdatePolicy(p))
					one := 1
					assert.NoError(t, e.SetGroupOverride("k", groupconc.GroupOverride{MaxConcurrency: &one}))
					h, err := groupconc.Submit(context.Background(), e, "k2", "b", succeed)
					if assert.NoError(t, err) {
						h.Wait()
					}
					_ = e.Stats()
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					assert.NoError(t, e.Shutdown(ctx))
					ok = true
				}()
				synctest.Wait()
				select {
				case <-finished:
				default:
					t.Fatal("a lock was left held by the caller the resolver's Goexit ended")
				}
			})
		})
	}
}

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

// A child's resolver that ends its caller's goroutine as the child is made
// leaves its parent counted no more: the parent is forgotten when idle.
func TestAChildsResolverThatEndsItsCallerLeavesItsParentForgettable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var once atomic.Bool
		e := groupconc.New(mustBuild(t, builder().ParentSeparator("/").IdleGroupTTL(time.Minute).ConcurrencyResolver(func(k string) int {
			if k == "a/k" && once.CompareAndSwap(false, true) {
				runtime.Goexit()
			}
			return 1
		})))
		defer e.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = groupconc.Submit(context.Background(), e, "a/k", "x", succeed)
		}()
		<-done
		h, err := groupconc.Submit(context.Background(), e, "a/k", "y", succeed)
		require.NoError(t, err)
		h.Wait()
		time.Sleep(5 * time.Minute) // fake clock
		e.Stats()
		time.Sleep(5 * time.Minute) // fake clock
		e.Stats()
		_, ok := e.GroupStats("a")
		assert.False(t, ok, "a never forgotten")
		assert.Zero(t, e.Stats().Groups)
	})
}

// Two first uses of keys whose policies, before and after a change, make
// each the other's parent: neither waits for the other for ever. The one
// that would wait for itself is refused, naming the cycle.
func TestCrossedParentsAcrossAChangeOfPolicyAreRefusedNotDeadlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var first atomic.Bool
		before := mustBuild(t, builder().ParentResolver(func(k string) string {
			switch k {
			case "X":
				return "P"
			case "P":
				if first.CompareAndSwap(false, true) {
					<-gate // X is being made, and waits for P
				}
			}
			return ""
		}))
		after := mustBuild(t, builder().ParentResolver(func(k string) string {
			if k == "P" {
				return "X"
			}
			return ""
		}))
		e := groupconc.New(before)
		defer e.Close()
		errs := make(chan error, 2)
		go func() {
			_, err := groupconc.Submit(context.Background(), e, "X", "x", succeed)
			errs <- err
		}()
		synctest.Wait()
		require.NoError(t, e.UpdatePolicy(after))
		go func() {
			_, err := groupconc.Submit(context.Background(), e, "P", "p", succeed)
			errs <- err
		}()
		synctest.Wait()
		close(gate)
		synctest.Wait()
		require.Len(t, errs, 2, "a Submit waits for ever")
		refused := 0
		for range 2 {
			if err := <-errs; err != nil {
				assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
				assert.ErrorContains(t, err, "cycle of parents")
				refused++
			}
		}
		assert.NotZero(t, refused)
		h, err := groupconc.Submit(context.Background(), e, "P", "p2", succeed)
		require.NoError(t, err, "P works after")
		h.Wait()
	})
}

package goroutines

import (
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// StartedBy counts the goroutines fn starts and theirs, alive as it
// returns, and none started by others meanwhile or before. It runs in a
// synctest bubble: a goroutine that closed a channel may still be on its
// way out as the receiver wakes, and synctest.Wait returns only once it
// has exited.
func TestStartedByCountsOnlyFnsGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stop := make(chan struct{})
		defer close(stop)
		wait := func() { <-stop }
		go wait() // before fn: not counted
		others := make(chan struct{})
		go func() { // another goroutine's, started while fn runs: not counted
			<-others
			go wait()
			others <- struct{}{}
		}()
		n, profile := StartedBy(func() {
			for range 3 {
				go wait()
			}
			go func() { go wait() }() // a goroutine's goroutine: counted
			others <- struct{}{}
			<-others
			go func() {}()  // ended before StartedBy counts: not counted
			synctest.Wait() // every other goroutine has exited or waits for stop
		})
		if n != 4 {
			t.Errorf("StartedBy counted %d goroutines, want 4. Profile:\n%s", n, profile)
		}
	})
}

// Each call counts its own: goroutines an earlier call counted, still
// alive, are not counted again.
func TestStartedByCountsEachCallsOwn(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	StartedBy(func() { go func() { <-stop }() })
	if n, profile := StartedBy(func() {}); n != 0 {
		t.Errorf("StartedBy counted %d goroutines, want 0. Profile:\n%s", n, profile)
	}
}

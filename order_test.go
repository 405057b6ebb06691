package groupconc_test

// Waiting tasks start first come, first served: in Submit order within a
// group, and a newcomer never passes a waiter.

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Weights are always 1 here, so there is no head-of-line blocking by a
// large request; what remains is "no barging": a new task never overtakes
// one already waiting at the same layer, and waiters start in the order they
// reached the layer.
func TestNoBargingPastQueuedWaiter(t *testing.T) {
	for _, layer := range waitLayers {
		t.Run(layer.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newEnv(t, layer.policy(1, -1))
				holdGate, wGate, yGate := make(chan struct{}), make(chan struct{}), make(chan struct{})
				r.submit(layer.key(0), block(holdGate))
				synctest.Wait()
				w := r.submit(layer.key(1), block(wGate))
				synctest.Wait()
				close(holdGate) // the permit is handed to w, not left for grabs
				y := r.submit(layer.key(2), block(yGate))
				synctest.Wait()
				assert.True(t, r.started(w), "the queued waiter gets the permit")
				assert.False(t, r.started(y), "a later Submit must not barge past it")
				close(wGate)
				synctest.Wait()
				assert.True(t, r.started(y))
				close(yGate)
				r.finish()
			})
		})
	}
}

func TestWaitersStartInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var order []string
		r := newEnv(t, builder().DefaultMaxConcurrencyPerGroup(1), groupconc.ListenerFuncs{
			Started: func(_, id string) { mu.Lock(); order = append(order, id); mu.Unlock() },
		})
		gates := make([]chan struct{}, 6)
		var ids []string
		for i := range gates {
			gates[i] = make(chan struct{})
			ids = append(ids, r.submit("a", block(gates[i])).TaskID())
			synctest.Wait()
		}
		for _, g := range gates {
			close(g)
			synctest.Wait()
		}
		assert.Equal(t, ids, order)
		r.finish()
	})
}

// The executor documents Submit order, not just arrival in the
// layer's line: waiters submitted back to back, with no pause for their
// goroutines to park, still start in Submit order.
func TestWaitersStartInSubmitOrderWithoutPauses(t *testing.T) {
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var order []string
			r := newEnv(t, builder().DefaultMaxConcurrencyPerGroup(1).GlobalMaxInFlight(2), groupconc.ListenerFuncs{
				Started: func(_, id string) { mu.Lock(); order = append(order, id); mu.Unlock() },
			})
			gates := make([]chan struct{}, 8)
			var ids []string
			for i := range gates {
				gates[i] = make(chan struct{})
				ids = append(ids, r.submit("a", block(gates[i])).TaskID())
			}
			for _, g := range gates {
				synctest.Wait()
				close(g)
			}
			r.finish()
			assert.Equal(t, ids, order)
		})
	}
}

// With a layer of 2 permits, two tasks waiting in
// line and both holders returning, a task submitted in the same moment must
// not take a permit ahead of the waiters, even while the second waiter has
// been handed its permit and not yet been carried on to run.
// The window is a real race, so it is run many times with varied yields.
func TestNewcomerNeverPassesWaitersDuringHandOff(t *testing.T) {
	passed := 0
	for i := range 300 {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder().DefaultMaxConcurrencyPerGroup(2))
			g1, g2, wGate := make(chan struct{}), make(chan struct{}), make(chan struct{})
			r.submit("a", block(g1))
			r.submit("a", block(g2))
			synctest.Wait()
			w1 := r.submit("a", block(wGate))
			w2 := r.submit("a", block(wGate))
			synctest.Wait()
			close(g1)
			close(g2)
			for range i % 7 {
				runtime.Gosched()
			}
			y := r.submit("a", block(wGate))
			synctest.Wait()
			if r.started(y) {
				passed++
			}
			assert.Equal(t, 2, r.countStarted(w1, w2), "both waiters hold the two permits")
			close(wGate)
			r.finish()
		})
		if t.Failed() {
			break
		}
	}
	assert.Zero(t, passed, "a newcomer passed a waiting task")
}

// TestWaitingTasksOfAGroupRunInSubmitOrder: with limit 1, tasks submitted
// one after another run in that order, whatever order the scheduler runs
// their goroutines in.
func TestWaitingTasksOfAGroupRunInSubmitOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		var mu sync.Mutex
		var order []string
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for i := range 20 {
			id := fmt.Sprint(i)
			h, err := groupconc.Submit(t.Context(), e, "g", id, func(ctx context.Context) (int, error) {
				mu.Lock()
				order = append(order, id)
				mu.Unlock()
				if i == 0 {
					<-gate
				}
				return i, nil
			})
			require.NoError(t, err)
			hs = append(hs, h)
		}
		synctest.Wait()
		close(gate)
		for _, h := range hs {
			h.Wait()
		}
		want := make([]string, 20)
		for i := range want {
			want[i] = fmt.Sprint(i)
		}
		assert.Equal(t, want, order)
	})
}

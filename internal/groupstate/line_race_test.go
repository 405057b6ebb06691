package groupstate

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Two tasks take a line of limit 1 again and again, each giving its permit
// back as soon as it holds it. Between rounds each stays out a varying
// while, so a join often meets a release that found nobody waiting. A
// permit a joiner takes as it comes back is given back once (release,
// join): no two tasks hold the permit, and the count ends at 0. A break
// shows in about half the runs on two busy CPUs, so -count finds it.
func TestLineReleaseRacingAJoinerGivesThePermitOnce(t *testing.T) {
	rounds := 500000
	if raceEnabled {
		rounds = 20000
	}
	l := newFIFOLine[tk](1)
	ws := newWaiters(2)
	woken := make(map[*Permits[tk]]chan struct{}, len(ws))
	for _, w := range ws {
		woken[w] = make(chan struct{}, 1)
	}
	var holders, twice atomic.Int32
	var spun atomic.Int64
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for i := range rounds {
				for range i % 64 { // out of the line a while
					spun.Add(1)
				}
				if !l.join(w, nil) {
					<-woken[w] // handed the permit by a release
					if w.group.passTurn() != nil {
						t.Error("a task alone in its group passed its turn on")
					}
				}
				if holders.Add(1) > 1 {
					twice.Add(1)
				}
				holders.Add(-1)
				for h := l.release(w, 1); h != nil; {
					next := h.next
					h.next = nil
					woken[h] <- struct{}{}
					h = next
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, twice.Load(), "two tasks held the line's one permit")
	assert.Zero(t, l.held.load(), "permits counted held with none held")
	assert.Zero(t, l.waiting.Load(), "waiters counted with none waiting")
}

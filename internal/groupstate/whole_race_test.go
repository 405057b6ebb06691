package groupstate

import (
	"sync"
	"testing"
)

// A costly task gives a line back while another task takes and drops the
// line's whole limit. Its check of the record must not read it twice:
// before the fix a record dropped between the two reads was a nil
// dereference (the storm found it).
func TestDropWholeRacingAnotherTasksWholeTake(t *testing.T) {
	l := newFIFOLine[tk](2)
	r := l.lock()
	r.unlock()
	var a, b tk
	xa := &Ext{cost: 4, amt: make([]int64, 3)}
	xb := &Ext{cost: 3, amt: make([]int64, 3)}
	rounds := 2000000
	if raceEnabled {
		rounds = 100000
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	defer wg.Wait()
	defer close(stop)
	started := make(chan struct{})
	wg.Go(func() { // a takes the whole limit and gives it back, again and again
		close(started)
		for {
			select {
			case <-stop:
				return
			default:
			}
			r.mu.Lock()
			r.whole.Store(&wholeTake[tk]{p: &a.p, cost: xa.cost, took: 2, held: 2})
			r.mu.Unlock()
			if n := l.dropWhole(&a.p, xa); n != 0 {
				t.Errorf("a got back %d raised permits, want 0", n)
				return
			}
		}
	})
	<-started
	for range rounds {
		if n := l.dropWhole(&b.p, xb); n != 0 {
			t.Fatalf("b, holding no whole limit, got back %d", n)
		}
	}
}

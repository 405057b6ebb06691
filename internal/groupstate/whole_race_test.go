package groupstate

import (
	"sync"
	"sync/atomic"
	"testing"
)

// A costly task gives a line back while another task takes the line's
// whole limit and gives it back (takeFor, dropWhole, release). Its check
// of the record must read it once: a record dropped between two reads was
// a nil dereference (the storm found it).
func TestDropWholeRacingAnotherTasksWholeTake(t *testing.T) {
	l := newFIFOLine[tk](2)
	var a, b tk
	xa := &Ext{amt: &costly{cost: 4}}
	xb := &Ext{amt: &costly{cost: 3}}
	// b checks until a has taken and dropped the whole limit this often,
	// so the two overlap however they are scheduled.
	cycles := int64(200000)
	if raceEnabled {
		cycles = 20000
	}
	var took atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	defer wg.Wait()
	defer close(stop)
	wg.Go(func() { // a takes the whole limit and gives it back, again and again
		defer took.Store(cycles) // an error ends b's checks too
		for {
			select {
			case <-stop:
				return
			default:
			}
			if !l.takeFor(&a.p, xa, heldConc, 0) {
				t.Error("a could not take the whole limit of a line nobody holds")
				return
			}
			if raised := l.dropWhole(&a.p, xa); raised != 0 {
				t.Errorf("a got back %d raised permits, want 0", raised)
				return
			}
			l.release(&a.p, xa.amount(heldConc, 0)) // as releaseLine gives it back
			took.Add(1)
		}
	})
	for took.Load() < cycles {
		if n := l.dropWhole(&b.p, xb); n != 0 {
			t.Fatalf("b, holding no whole limit, got back %d", n)
		}
	}
}

package benchmarks

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestStreamPeersBoundTheBacklogWithoutLoss checks what W6 relies on: a
// producer streaming gated tasks round-robin over 4 groups is held at each
// peer's bound (PerGroup running and, for a peer that queues, Queue
// waiting per group) with its Go blocked, no group ever runs more than
// PerGroup, and once the gate opens every task runs. It runs on real
// goroutines, not in a synctest bubble: pond's Stop submits to its
// package-level pool, which one bubble may not share with the next.
func TestStreamPeersBoundTheBacklogWithoutLoss(t *testing.T) {
	const groups, tasks = 4, 4 * 30
	c := StreamConfig{PerGroup: 2, Queue: 3}
	for _, p := range StreamPeers {
		t.Run(p.Name, func(t *testing.T) {
			r, err := p.New(c)
			require(t, err)
			defer r.Close()
			per := make([]gauge, groups)
			var ran, accepted atomic.Int64
			open := make(chan struct{})
			ts := make([]*Task, groups)
			for i := range ts {
				g := &per[i]
				ts[i] = NewTask(func() {
					g.inc()
					<-open
					g.dec()
					ran.Add(1)
				})
			}
			keys := groupKeys(groups)
			done := make(chan error, 1)
			go func() {
				for i := range tasks {
					if err := r.Go(keys[i%groups], ts[i%groups]); err != nil {
						done <- err
						return
					}
					accepted.Add(1)
				}
				done <- r.Wait()
			}()
			want := groups * c.PerGroup
			if p.Queues {
				want += groups * c.Queue
			}
			// Until the bound is reached and every group's tasks have
			// started; the deadline only turns a producer stuck short of it
			// into a failure, nothing waits on time.
			reached := func() bool {
				for i := range per {
					if per[i].cur.Load() < int64(c.PerGroup) {
						return false
					}
				}
				return accepted.Load() >= int64(want)
			}
			for deadline := time.Now().Add(time.Minute); !reached() && time.Now().Before(deadline); {
				runtime.Gosched()
			}
			settle() // a producer not held at the bound runs past it meanwhile
			if got := accepted.Load(); got != int64(want) {
				t.Errorf("tasks accepted before Go blocked: got %d, want %d", got, want)
			}
			for i := range per {
				if got := per[i].cur.Load(); got != int64(c.PerGroup) {
					t.Errorf("group %d: running while the producer waits: got %d, want %d", i, got, c.PerGroup)
				}
			}
			close(open)
			select {
			case err := <-done:
				require(t, err)
			case <-time.After(time.Minute):
				t.Fatalf("the stream never finished: %d of %d tasks ran", ran.Load(), tasks)
			}
			if got := ran.Load(); got != tasks {
				t.Errorf("tasks run: got %d, want %d", got, tasks)
			}
			for i := range per {
				if got := per[i].max.Load(); got > int64(c.PerGroup) {
					t.Errorf("group %d: most running at once: got %d, want at most %d", i, got, c.PerGroup)
				}
			}
		})
	}
}

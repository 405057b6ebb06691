package benchmarks

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// TestStreamPeersBoundTheBacklogWithoutLoss checks, in a synctest bubble,
// what W6 relies on: a producer streaming gated tasks round-robin over 4
// groups is held at each peer's bound (PerGroup running and, for a peer
// that queues, Queue waiting per group) with its Go blocked, no group ever
// runs more than PerGroup, and once the gate opens every task runs.
func TestStreamPeersBoundTheBacklogWithoutLoss(t *testing.T) {
	const groups, tasks = 4, 4 * 30
	c := StreamConfig{PerGroup: 2, Queue: 3}
	for _, p := range StreamPeers {
		t.Run(p.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
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
				var wg sync.WaitGroup
				var goErr, waitErr error
				wg.Go(func() {
					for i := range tasks {
						if goErr = r.Go(keys[i%groups], ts[i%groups]); goErr != nil {
							return
						}
						accepted.Add(1)
					}
					waitErr = r.Wait()
				})
				synctest.Wait() // every goroutine is blocked: the producer in Go
				want := groups * c.PerGroup
				if p.Queues {
					want += groups * c.Queue
				}
				if got := accepted.Load(); got != int64(want) {
					t.Errorf("tasks accepted before Go blocked: got %d, want %d", got, want)
				}
				for i := range per {
					if got := per[i].cur.Load(); got != int64(c.PerGroup) {
						t.Errorf("group %d: running while the producer waits: got %d, want %d", i, got, c.PerGroup)
					}
				}
				close(open)
				wg.Wait()
				require(t, goErr)
				require(t, waitErr)
				if got := ran.Load(); got != tasks {
					t.Errorf("tasks run: got %d, want %d", got, tasks)
				}
				for i := range per {
					if got := per[i].max.Load(); got > int64(c.PerGroup) {
						t.Errorf("group %d: most running at once: got %d, want at most %d", i, got, c.PerGroup)
					}
				}
			})
		})
	}
}

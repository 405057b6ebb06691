package groupstate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// Evict of a parent races the making of its first child. Whichever wins,
// a child that stays is under the parent's key's live group: never under
// the evicted one, where no eviction, shutdown or stats of the parent's
// key would reach it (found by a probe: a later task of the child and one
// of the new parent ran at once over the parent's limit of 1). The
// interleaving is found by trying.
func TestAnEvictRacingAChildsMakingLeavesNoChildUnderTheEvictedParent(t *testing.T) {
	limits := Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}
	cause := errors.New("evicted")
	orphans, rounds := 0, 20000
	if raceEnabled {
		rounds = 2000
	}
	var sink atomic.Int64
	for i := range rounds {
		spin := i % 3000
		gl := NewGlobal[xtk](64, Unlimited, false)
		gl.SetExt(func(t *xtk) *Ext { return &t.x })
		r := NewRegistry(context.Background(), gl, fixed(limits), func() int64 { return 0 })
		r.SetParents(slashParents, nil)
		var first xtk
		if _, err := r.Enter("t", &first.p, &first, 0); err != nil {
			t.Fatal(err)
		}
		first.p.Exit()
		start := make(chan struct{})
		var wg sync.WaitGroup
		var x xtk
		wg.Go(func() {
			<-start
			if _, err := r.Enter("t/u", &x.p, &x, 0); err == nil {
				x.p.Exit()
			}
		})
		wg.Go(func() {
			<-start
			for range spin {
				sink.Add(1)
			}
			r.Evict("t", cause, nil)
		})
		close(start)
		wg.Wait()
		if c, ok := r.Lookup("t/u"); ok {
			if p, live := r.Lookup("t"); !live || c.Parent() != p {
				orphans++
			}
		}
	}
	if orphans > 0 {
		t.Errorf("%d of %d rounds: t/u kept under an evicted t", orphans, rounds)
	}
}

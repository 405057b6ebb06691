package httpgc_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

// A page reloaded while its stream's producer builds a frame: the old
// stream leaves, the new one joins. The new producer waits for the old, so
// two never run at once (the race detector saw them write one field), and
// the old one's frame, built before a change, never comes after the new
// one's.
func TestAStreamJoiningAsTheLastLeavesWaitsForTheLastProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var armed atomic.Bool
		var inside, most atomic.Int32
		release := make(chan struct{})
		f := newFixture(t, httpgc.Options{History: -1, MaxClients: 1, DisplayKey: func(k string) string {
			if armed.Load() {
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				<-release
				inside.Add(-1)
			}
			return k
		}})
		t.Cleanup(f.gate.Release)
		armed.Store(true)
		a := watch(f.h, nil)
		synctest.Wait() // its producer is in publish, a's row read
		a.cancel()
		synctest.Wait() // a has left, and waits for the producer
		paused := true
		if err := f.e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &paused}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.e.SetGroupOverride("a", groupconc.GroupOverride{}) }()
		b := watch(f.h, nil)
		synctest.Wait()
		if n := most.Load(); n > 1 {
			t.Errorf("%d producers built a frame at once", n)
		}
		close(release)
		synctest.Wait()
		evs, _ := b.rec.events()
		var last string
		for _, ev := range evs {
			if ev.name == "snapshot" {
				last = ev.data
			}
		}
		var snap struct {
			Groups []struct {
				Group  string
				Paused bool
			}
		}
		if err := json.Unmarshal([]byte(last), &snap); err != nil {
			t.Fatalf("the latest snapshot %q: %v", last, err)
		}
		for _, g := range snap.Groups {
			if g.Group == "a" && !g.Paused {
				t.Errorf("the latest frame was built before a was paused")
			}
		}
		b.leave()
		<-a.done
	})
}

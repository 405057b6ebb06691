package groupconc

import (
	"sync"
	"testing"
	"unsafe"

	"github.com/kobe/groupconc/internal/groupstate"
)

// tasksInEveryShard returns tasks whose records pick every shard of the
// gate, n of each.
func tasksInEveryShard(t *testing.T, n int) []*task {
	t.Helper()
	var ts []*task
	per := [groupstate.Shards]int{}
	for range 1 << 20 {
		k := new(task)
		if i := groupstate.ShardOf(&k.permits); per[i] < n {
			per[i]++
			ts = append(ts, k)
		}
		if len(ts) == n*groupstate.Shards {
			return ts
		}
	}
	t.Fatalf("no task records in some shard after 1<<20 tries: %v", per)
	return nil
}

func drained(g *gate) bool {
	select {
	case <-g.drained:
		return true
	default:
		return false
	}
}

// TestGateShardIsACacheLine: each shard of the gate's counts fills one
// cache line, so tasks of different shards never write the same line.
func TestGateShardIsACacheLine(t *testing.T) {
	if n := unsafe.Sizeof(shard{}); n != 64 {
		t.Errorf("a shard takes %d bytes, want one cache line", n)
	}
}

// TestGateDrainsWhenTheLastTaskOfAnyShardLeaves enters tasks in every
// shard, closes the gate, and has them leave one by one: the gate is
// drained only once the last one left, whichever shard it counts in.
func TestGateDrainsWhenTheLastTaskOfAnyShardLeaves(t *testing.T) {
	for last := range groupstate.Shards {
		g := new(gate)
		*g = newGate()
		ts := tasksInEveryShard(t, 2)
		for _, k := range ts {
			if !g.enter(k) {
				t.Fatal("enter refused by an open gate")
			}
		}
		g.close()
		if g.enter(ts[0]) || g.enter(ts[len(ts)-1]) {
			t.Fatal("enter accepted by a closed gate")
		}
		var keep *task
		for _, k := range ts {
			if keep == nil && groupstate.ShardOf(&k.permits) == last {
				keep = k
				continue
			}
			g.leave(k)
			if drained(g) {
				t.Fatalf("drained with a task of shard %d still in", last)
			}
		}
		g.leave(keep)
		if !drained(g) {
			t.Fatalf("not drained once the last task (shard %d) left", last)
		}
		if got := g.submitted(); got != uint64(len(ts)) {
			t.Errorf("submitted = %d, want %d", got, len(ts))
		}
	}
}

// TestGateIsNeverDrainedEarly has tasks in every shard enter and leave on
// goroutines of their own while the gate closes. No task sees the gate
// drained while it is in, and once all have left it is drained.
func TestGateIsNeverDrainedEarly(t *testing.T) {
	for range 50 {
		g := new(gate)
		*g = newGate()
		ts := tasksInEveryShard(t, 4)
		var wg sync.WaitGroup
		for i, k := range ts {
			wg.Go(func() {
				if !g.enter(k) {
					return
				}
				if drained(g) {
					t.Error("drained while a task is in")
				}
				g.leave(k)
			})
			if i == len(ts)/2 {
				wg.Go(g.close)
			}
		}
		wg.Wait()
		if !drained(g) {
			t.Fatal("not drained once every task left")
		}
		if in, out := g.submitted(), g.ended(); in != out {
			t.Fatalf("submitted %d, ended %d", in, out)
		}
	}
}

// A goroutine started for the lines, not for a task of its own (repark,
// drain), joins the crew only while it is open. Once Shutdown has closed
// the crew, join starts none, and a join before close makes close wait.
func TestCrewJoinStartsNoGoroutineOnceClosed(t *testing.T) {
	open := newCrew()
	if !open.join() {
		t.Fatal("join of an open crew: false, want true")
	}
	open.close()
	select {
	case <-open.done:
		t.Fatal("crew done with a goroutine that joined before close still running")
	default:
	}
	open.exit()
	<-open.done

	closed := newCrew()
	closed.close()
	<-closed.done
	if closed.join() {
		t.Fatal("join of a closed crew: true, want false")
	}
	if n := closed.running.Load(); n != 0 {
		t.Fatalf("closed crew runs %d goroutines after a join, want 0", n)
	}
}

// A closed crew is done only once its last goroutine exits, not its first.
func TestCrewIsDoneWhenItsLastGoroutineExits(t *testing.T) {
	c := newCrew()
	c.add()
	c.add()
	c.close()
	c.exit()
	select {
	case <-c.done:
		t.Fatal("crew done with a goroutine still running")
	default:
	}
	c.exit()
	<-c.done
}

// One repark at a time is due per paused group. Once it begins, a task that
// joins a line after it is due another, or it would wait there through the
// pause holding a permit of the global cap or of an ancestor.
func TestAReparkIsDueAgainOnceItBegins(t *testing.T) {
	var r reparks
	a, b := new(groupstate.Group[task]), new(groupstate.Group[task])
	for i, step := range []struct {
		g    *groupstate.Group[task]
		want bool
	}{{a, true}, {a, false}, {b, true}, {a, false}} {
		if got := r.add(step.g); got != step.want {
			t.Fatalf("add %d: %v, want %v", i, got, step.want)
		}
	}
	r.begin(a)
	if !r.add(a) {
		t.Fatal("add after its repark began: false, want true (due again)")
	}
	if r.add(b) {
		t.Fatal("add of another group, still due: true, want false")
	}
}

package groupconc

import (
	"sync"
	"sync/atomic"

	"github.com/kobe/groupconc/internal/groupstate"
)

// runners is the record of which task each of the executor's goroutines
// runs. So a snapshot can say how long a group's oldest running task has run
// (GroupStats.OldestRunning). A goroutine takes a record when it starts
// running tasks and gives it back when it stops. Running a task costs two
// stores to its own record, which no other goroutine writes. Records are
// reused. A snapshot reads every record, so records left free once a
// burst is over are let go (see put): a snapshot then costs what runs, not
// the most that ever ran at once.
type runners struct {
	// spares are free records kept out of free, a few a shard of the gate,
	// taken and given back without the lock: a Do takes one for each call.
	// A shard's own spares keep callers on two CPUs off one word.
	spares *[groupstate.Shards]spare

	mu   sync.Mutex
	all  []*runner // guarded by mu; a new array when it shrinks (oldest reads it unlocked)
	free []*runner // guarded by mu
}

// spare is a shard's free records, four on one cache line: as many as
// the callers of Do one processor runs at once on a group of limit 4.
// With one, the lock's path took up to a tenth of BenchmarkDoContended's
// time on two CPUs (benchmarks/RESULTS.md, "Spare runner records").
type spare struct {
	r [4]atomic.Pointer[runner]
	_ [32]byte // a cache line each, as the gate's shards
}

// runner is one goroutine's record, on a cache line of its own. Callers of
// Do on two CPUs write theirs at once (BenchmarkDoContended).
type runner struct {
	t     atomic.Pointer[task] // the task running, or nil
	start atomic.Int64         // when t got its last permit, on e's clock
	shard uint8                // the spare it goes back to
	gone  bool                 // let go by trimLocked; guarded by runners.mu
	_     [46]byte
}

func newRunners() runners { return runners{spares: new([groupstate.Shards]spare)} }

// get returns a record for a goroutine about to run t.
func (rs *runners) get(t *task) *runner {
	i := groupstate.ShardOf(&t.permits)
	for j := range rs.spares[i].r {
		p := &rs.spares[i].r[j]
		if p.Load() != nil {
			if r := p.Swap(nil); r != nil {
				return r
			}
		}
	}
	r := rs.getLocked()
	r.shard = uint8(i)
	return r
}

func (rs *runners) getLocked() *runner {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if n := len(rs.free); n > 0 {
		r := rs.free[n-1]
		rs.free = rs.free[:n-1]
		return r
	}
	r := new(runner)
	rs.all = append(rs.all, r)
	return r
}

// put gives back r, which runs nothing now.
func (rs *runners) put(r *runner) {
	for j := range rs.spares[r.shard].r {
		p := &rs.spares[r.shard].r[j]
		if p.Load() == nil && p.CompareAndSwap(nil, r) {
			return
		}
	}
	rs.mu.Lock()
	rs.free = append(rs.free, r)
	rs.trimLocked()
	rs.mu.Unlock()
}

// minFree is how many free records trimLocked always keeps.
const minFree = 64

// trimLocked lets go of free records once they are most of the records: a
// burst of goroutines is over. It keeps as many free as run, and at least
// minFree, so a load that rises and falls again reuses them. Each trim
// costs the records held, and follows at least as many puts as it lets
// go, so a put costs O(1) amortised. Those let go leave all in a new
// array: oldest may be reading the old one without the lock.
func (rs *runners) trimLocked() {
	nfree := len(rs.free)
	inUse := len(rs.all) - nfree // spares included
	if nfree <= minFree || nfree <= 3*inUse {
		return
	}
	keep := max(minFree, inUse)
	for _, r := range rs.free[keep:] {
		r.gone = true
	}
	all := make([]*runner, 0, len(rs.all)-(nfree-keep))
	for _, r := range rs.all {
		if !r.gone {
			all = append(all, r)
		}
	}
	clear(rs.free[keep:])
	rs.free = rs.free[:keep]
	rs.all = all
}

// running notes that r's goroutine runs t from start. A nil t means nothing
// runs.
func (r *runner) running(t *task, start int64) {
	if t != nil {
		r.start.Store(start)
	}
	r.t.Store(t)
}

// oldest calls f with the group of each running task and when it started,
// as the records show them now.
func (rs *runners) oldest(f func(g *groupstate.Group[task], start int64)) {
	rs.mu.Lock()
	all := rs.all[:len(rs.all):len(rs.all)]
	rs.mu.Unlock()
	for _, r := range all {
		t := r.t.Load()
		start := r.start.Load()
		if t == nil || r.t.Load() != t {
			continue // nothing, or it moved on meanwhile
		}
		f(t.permits.Group(), start)
	}
}

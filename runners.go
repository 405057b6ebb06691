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
// reused, never freed. There are as many as goroutines ever ran tasks at
// once.
type runners struct {
	// spare is a free record kept out of free, taken and given back
	// without the lock: a Do takes one for each call.
	spare atomic.Pointer[runner]

	mu   sync.Mutex
	all  []*runner // guarded by mu; only grows
	free []*runner // guarded by mu
}

// runner is one goroutine's record. Records are not padded to cache lines
// of their own: BenchmarkSubmitWaitParallel measured no faster with it.
type runner struct {
	t     atomic.Pointer[task] // the task running, or nil
	start atomic.Int64         // when t got its last permit, on e's clock
}

// get returns a record for a goroutine about to run tasks.
func (rs *runners) get() *runner {
	if r := rs.spare.Swap(nil); r != nil {
		return r
	}
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
	if rs.spare.CompareAndSwap(nil, r) {
		return
	}
	rs.mu.Lock()
	rs.free = append(rs.free, r)
	rs.mu.Unlock()
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

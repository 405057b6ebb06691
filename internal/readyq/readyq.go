// Package readyq is the queue of tasks that are ready to run and wait only
// for a goroutine: an intrusive FIFO, plus the rule that decides when a
// goroutine must be started to serve it, so that goroutines are reused and
// a ready task never waits for a running one.
//
// The queue has a role, held by one goroutine at a time: its holder takes
// tasks out. Whenever the queue holds a task, some goroutine that runs no
// task is bound to take it out: the holder, or a goroutine started for the
// role that has not run yet (the role is then on offer, and a goroutine that
// has finished its task may Claim it first, which is how goroutines are
// reused). No goroutine waits for work: one that finds nothing ends.
//
// The protocol, for the goroutines of the caller:
//   - Push a task; if it reports start, start a goroutine that calls Arrive.
//   - A goroutine started so calls Arrive first; if it reports false it has
//     nothing to do and ends.
//   - A goroutine that has finished its task calls Claim; if it reports
//     true it holds the role.
//   - The holder calls Take: it returns the next task (and gives the role
//     up or hands it on first, since the task may run for long), or nil
//     once the queue is empty and the role given up. If Take reports start,
//     start a goroutine that calls Arrive.
//
// Speed: Push is one CAS on a lock-free stack and, when the stack was
// empty, one CAS on the role word; the holder reverses the stack into a
// private list, so tasks come out oldest first. BenchmarkQueue measures it
// against mutexQueue (queue_test.go), a mutex-guarded queue behind the same
// API, both driven as the executor drives them (goroutine starts included);
// on 2 CPUs, go test -bench Queue -count 10 -cpu 2, then benchstat:
//
//	                      lockfree       mutex
//	Queue/producers=1-2   97.59n ± 19%   136.40n ± 20%  +39.76% (p=0.000 n=10)
//	Queue/producers=4-2   94.20n ± 11%   121.70n ±  6%  +29.19% (p=0.000 n=10)
package readyq

import "sync/atomic"

// Linked is the constraint on the tasks a Queue holds: a pointer to T that
// keeps the link to the next task, so Push allocates nothing. The queue
// sets and reads the link only while the task is in it, and leaves it nil
// when it takes the task out: the link may share its storage with what the
// task does not use while it is queued.
type Linked[T any] interface {
	*T
	ReadyNext() *T
	SetReadyNext(next *T)
}

// Queue is a FIFO of ready tasks with the role described in the package
// comment. Its zero value is an empty queue with the role free. It is safe
// for concurrent use as the protocol says: Push, Arrive and Claim from any
// goroutine, Take by the holder of the role only.
type Queue[T any, P Linked[T]] struct {
	in atomic.Pointer[T] // pushed tasks, newest first
	_  [56]byte
	// The role (roleMask bits) and, above them, how many goroutines were
	// started for it and have not yet run. The role on offer always has
	// one of those goroutines coming.
	word atomic.Uint64
	out  P // tasks taken from in, oldest first; touched by the holder only
}

const (
	roleFree    = 0 // nobody is bound to look at the queue, which has nothing in out
	roleHeld    = 1 // a goroutine holds the role and is looking at the queue
	roleOffered = 2 // a goroutine started for the role will take it, unless another does first
	roleMask    = 3
	oneComing   = 4 // one goroutine started for the role, not yet run
)

// Push adds t to the queue. It reports whether the caller must start a
// goroutine, which calls Arrive.
func (q *Queue[T, P]) Push(t P) (start bool) {
	for {
		head := q.in.Load()
		t.SetReadyNext(head)
		if q.in.CompareAndSwap(head, (*T)(t)) {
			if head != nil {
				return false // whoever is bound to take head takes t with it
			}
			break
		}
	}
	// The holder gives the role up before it looks at in for the last
	// time (see yield): either it sees t there, or this sees the role free.
	for {
		w := q.word.Load()
		if w&roleMask != roleFree {
			return false
		}
		if start, w2 := offer(w); q.word.CompareAndSwap(w, w2) {
			return start
		}
	}
}

// Arrive is called first by a goroutine started for the role: it takes the
// role if it is on offer and reports whether it did; otherwise the
// goroutine has nothing to do.
func (q *Queue[T, P]) Arrive() bool {
	for {
		w := q.word.Load()
		w2 := w - oneComing
		if w&roleMask == roleOffered {
			w2 = w2&^roleMask | roleHeld
		}
		if q.word.CompareAndSwap(w, w2) {
			return w&roleMask == roleOffered
		}
	}
}

// Claim is called by a goroutine that has finished its task: it takes the
// role if it is on offer, or free while a task is in the queue, and reports
// whether it did.
func (q *Queue[T, P]) Claim() bool {
	for {
		w := q.word.Load()
		switch w & roleMask {
		case roleHeld:
			return false
		case roleFree:
			if q.in.Load() == nil {
				return false
			}
		}
		if q.word.CompareAndSwap(w, w&^roleMask|roleHeld) {
			return true
		}
	}
}

// Take is called by the holder of the role. It returns the oldest task, or
// nil once the queue is empty, having given the role up. Before returning a
// task it gives the role up, or hands it on if more tasks are ready: the
// caller runs the task and may take long. It reports whether the caller must
// start a goroutine, which calls Arrive.
func (q *Queue[T, P]) Take() (t P, start bool) {
	for {
		t, more := q.pop()
		switch {
		case t == nil && !q.yield():
			return nil, false
		case t == nil: // a task came as the role was given up
			continue
		case more || q.yield():
			start = q.hand()
		}
		return t, start
	}
}

// offer returns the word with the role, free or held, put on offer, and
// whether a goroutine must be started for it: one already coming will do.
func offer(w uint64) (start bool, w2 uint64) {
	coming := w &^ roleMask
	if coming == 0 {
		return true, roleOffered | oneComing
	}
	return false, roleOffered | coming
}

// hand puts the held role on offer. It reports whether the caller must
// start a goroutine for it.
func (q *Queue[T, P]) hand() (start bool) {
	for {
		w := q.word.Load()
		if start, w2 := offer(w); q.word.CompareAndSwap(w, w2) {
			return start
		}
	}
}

// pop takes the oldest task out of the queue, holding the role, and reports
// whether more are ready; nil if the queue is empty.
func (q *Queue[T, P]) pop() (t P, more bool) {
	if q.out == nil {
		// Reverse what was pushed since the last time: oldest first.
		for t := P(q.in.Swap(nil)); t != nil; {
			next := t.ReadyNext()
			t.SetReadyNext((*T)(q.out))
			q.out, t = t, next
		}
	}
	t = q.out
	if t == nil {
		return nil, false
	}
	q.out = t.ReadyNext()
	t.SetReadyNext(nil)
	return t, q.out != nil || q.in.Load() != nil
}

// yield gives up the held role, out being empty, and then looks at in
// again: if a task came, it takes the role back, if it still can, and
// reports true.
func (q *Queue[T, P]) yield() (held bool) {
	q.word.And(^uint64(roleMask)) // roleFree; only the holder changes the role
	return q.Claim()
}

// Package readyq is the queue of tasks that are ready to run and wait only
// for a goroutine. It is an intrusive FIFO, plus the rule that decides when
// a goroutine must be started to serve it. So goroutines are reused, and a
// ready task never waits for a running one.
//
// The queue has a role, held by one goroutine at a time. The holder takes
// tasks out. Whenever the queue holds a task, some goroutine that runs no
// task is bound to take it out. It is either the holder, or a goroutine
// started for the role that has not run yet. In the second case the role is
// on offer, and a goroutine that has finished its task may Claim it first.
// That is how goroutines are reused. No goroutine waits for work. One that
// finds nothing ends.
//
// The protocol, for the goroutines of the caller:
//   - Push a task. If it reports start, start a goroutine that calls Arrive.
//   - A goroutine started so calls Arrive first. If it reports false, it has
//     nothing to do and ends.
//   - A goroutine that has finished its task calls Claim. If it reports
//     true, it holds the role.
//   - The holder calls Take, which gives the role up with the task it
//     returns. If Take reports start, start a goroutine that calls Arrive.
//
// Push is one CAS on a lock-free stack. When the stack was empty, it is one
// more CAS on the role word. The holder reverses the stack into a private
// list, so tasks come out oldest first. BenchmarkQueue measures it against
// mutexQueue (queue_test.go), a mutex-guarded queue behind the same API.
// Both are driven as the executor drives them, goroutine starts included.
// The lock-free queue is the faster at two CPUs. The figures are in
// benchmarks/RESULTS.md, "The ready queue against a mutex".
package readyq

import "sync/atomic"

// Linked is the constraint on the tasks a Queue holds. It is a pointer to T
// that keeps the link to the next task, so Push allocates nothing. The queue
// sets and reads the link only while the task is in it. It leaves the link
// nil when it takes the task out. So the link may share its storage with
// what the task does not use while it is queued.
type Linked[T any] interface {
	*T
	ReadyNext() *T
	SetReadyNext(next *T)
}

// Queue is a FIFO of ready tasks with the role described in the package
// comment. Its zero value is an empty queue with the role free. It is safe
// for concurrent use as the protocol says. Push, Arrive and Claim may be
// called from any goroutine, and Take by the holder of the role only.
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
	// time (see yield). So either it sees t there, or this sees the role
	// free.
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

// Arrive is called first by a goroutine started for the role. It takes the
// role if it is on offer, and reports whether it did. If it did not, the
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

// Claim is called by a goroutine that has finished its task. It takes the
// role if it is on offer, or if it is free while a task is in the queue. It
// reports whether it did.
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
// nil once the queue is empty and the role given up. Before it returns a
// task, it gives the role up, or hands it on if more tasks are ready, since
// the caller runs the task and may take long. Take reports whether the
// caller must start a goroutine, which calls Arrive.
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

// offer returns the word with the role, free or held, put on offer. It also
// returns whether a goroutine must be started for it. One already coming
// will do.
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
// whether more are ready. It returns nil if the queue is empty.
func (q *Queue[T, P]) pop() (t P, more bool) {
	if q.out == nil {
		// Reverse what was pushed since the last time, so oldest first.
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
// again. If a task came, it takes the role back if it still can, and
// reports true.
func (q *Queue[T, P]) yield() (held bool) {
	q.word.And(^uint64(roleMask)) // roleFree; only the holder changes the role
	return q.Claim()
}

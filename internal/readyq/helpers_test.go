package readyq

import (
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// item is the task the tests queue.
type item struct {
	next *item
	done atomic.Int32 // times taken
}

func (it *item) ReadyNext() *item        { return it.next }
func (it *item) SetReadyNext(next *item) { it.next = next }

func assertTrue(t *testing.T, ok bool, what string) {
	t.Helper()
	if !ok {
		t.Errorf("not so: %s", what)
	}
}

func requireTrue(t *testing.T, ok bool) {
	t.Helper()
	if !ok {
		t.FailNow()
	}
}

func assertSame(t *testing.T, got, want *item, what string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %p, want %p", what, got, want)
	}
}

func assertWord(t *testing.T, q *Queue[item, *item], want uint64, what string) {
	t.Helper()
	if got := q.word.Load(); got != want {
		t.Errorf("%s: role word = %#x, want %#x", what, got, want)
	}
}

// mutexQueue is the plain alternative to Queue that BenchmarkQueue measures
// it against: the same protocol, with the role and the list under a mutex.
type mutexQueue struct {
	mu         sync.Mutex
	head, tail *item  // guarded by mu
	role       uint64 // guarded by mu: roleFree, roleHeld or roleOffered
	coming     int    // guarded by mu: goroutines started for the role, not yet run
}

func (q *mutexQueue) Push(it *item) (start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	wasEmpty := q.head == nil
	if q.tail == nil {
		q.head = it
	} else {
		q.tail.next = it
	}
	q.tail = it
	if !wasEmpty || q.role != roleFree {
		return false
	}
	return q.offerLocked()
}

func (q *mutexQueue) offerLocked() (start bool) {
	q.role = roleOffered
	if q.coming == 0 {
		q.coming = 1
		return true
	}
	return false
}

func (q *mutexQueue) Arrive() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.coming--
	if q.role == roleOffered {
		q.role = roleHeld
		return true
	}
	return false
}

func (q *mutexQueue) Claim() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.role == roleHeld || q.role == roleFree && q.head == nil {
		return false
	}
	q.role = roleHeld
	return true
}

func (q *mutexQueue) Take() (it *item, start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	it = q.head
	if it == nil {
		q.role = roleFree
		return nil, false
	}
	q.head, it.next = it.next, nil
	if q.head == nil {
		q.tail = nil
		q.role = roleFree
		return it, false
	}
	return it, q.offerLocked()
}

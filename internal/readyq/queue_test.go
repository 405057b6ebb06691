package readyq

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// The queue's protocol, step by step on one goroutine: each step is what one
// goroutine of the caller would do at that point, so the interleavings that
// matter are written out rather than hoped for.

func TestFirstPushStartsOneGoroutine(t *testing.T) {
	var q Queue[item, *item]
	a, b := new(item), new(item)
	assertTrue(t, q.Push(a), "first push onto an empty, free queue starts a goroutine")
	assertTrue(t, !q.Push(b), "a push onto a non-empty queue relies on whoever takes the first")
	assertTrue(t, q.Arrive(), "the started goroutine takes the role on offer")
	assertTrue(t, !q.Arrive(), "a second goroutine finds the role taken")
	got, more := q.pop()
	assertSame(t, got, a, "oldest first")
	assertTrue(t, more, "b is still there")
	got, more = q.pop()
	assertSame(t, got, b, "then b")
	assertTrue(t, !more, "nothing after b")
	got, _ = q.pop()
	assertSame(t, got, nil, "empty")
}

// The holder gives the role up and then looks again: a task pushed while it
// held the role (whose Push saw the role held and started nobody) is seen.
func TestYieldSeesAPushWhileHeld(t *testing.T) {
	var q Queue[item, *item]
	a, b := new(item), new(item)
	requireTrue(t, q.Push(a))
	requireTrue(t, q.Arrive())
	got, more := q.pop()
	assertSame(t, got, a, "a first")
	requireTrue(t, !more)
	assertTrue(t, !q.Push(b), "the role is held: its holder answers for b")
	assertTrue(t, q.yield(), "the holder takes the role back for b")
	got, _ = q.pop()
	assertSame(t, got, b, "then b")
	assertTrue(t, !q.yield(), "nothing left: the role is free")
	assertWord(t, &q, 0, "free, nobody coming")
}

// A goroutine that has finished its task takes the role on offer before the
// goroutine started for it runs; that one then finds nothing to do.
func TestFinishedGoroutineTakesTheOfferedRole(t *testing.T) {
	var q Queue[item, *item]
	a := new(item)
	requireTrue(t, q.Push(a))
	assertTrue(t, q.Claim(), "the role on offer is taken by a finished goroutine")
	assertTrue(t, !q.Claim(), "held: another finished goroutine ends")
	got, _ := q.pop()
	assertSame(t, got, a, "a")
	requireTrue(t, !q.yield())
	assertTrue(t, !q.Arrive(), "the goroutine started for the role arrives to nothing")
	assertWord(t, &q, 0, "free, nobody coming")
	assertTrue(t, !q.Claim(), "free and empty: nothing to take")
}

// Handing the role on starts a goroutine only when none is coming already.
func TestHandStartsAGoroutineOnlyIfNoneIsComing(t *testing.T) {
	var q Queue[item, *item]
	a, b, c := new(item), new(item), new(item)
	requireTrue(t, q.Push(a))
	requireTrue(t, !q.Push(b))
	requireTrue(t, q.Claim()) // the started goroutine is still coming
	got, more := q.pop()
	assertSame(t, got, a, "a")
	requireTrue(t, more)
	assertTrue(t, !q.hand(), "one goroutine already coming")
	requireTrue(t, q.Arrive())
	got, more = q.pop()
	assertSame(t, got, b, "b")
	requireTrue(t, !more)
	requireTrue(t, !q.Push(c))
	assertTrue(t, q.hand(), "nobody coming: start one")
	requireTrue(t, q.Arrive())
	got, _ = q.pop()
	assertSame(t, got, c, "c")
	assertTrue(t, !q.yield(), "empty")
	assertWord(t, &q, 0, "free, nobody coming")
}

// Take hands the role on when more tasks are ready, so that the holder may
// run the task it took for long while another goroutine serves the rest.
// A task it returns has its link cleared, as Linked promises.
func TestTakeHandsTheRoleOnWhenMoreAreReady(t *testing.T) {
	var q Queue[item, *item]
	a, b := new(item), new(item)
	requireTrue(t, q.Push(a))
	requireTrue(t, !q.Push(b))
	requireTrue(t, q.Arrive())
	got, start := q.Take()
	assertSame(t, got, a, "a")
	assertSame(t, a.ReadyNext(), nil, "a's link once taken")
	assertTrue(t, start, "b is ready and nobody is coming: start a goroutine")
	requireTrue(t, q.Arrive())
	got, start = q.Take()
	assertSame(t, got, b, "b")
	assertSame(t, b.ReadyNext(), nil, "b's link once taken")
	assertTrue(t, !start, "nothing more: the role is given up")
	assertWord(t, &q, 0, "free, nobody coming")
}

// A holder that calls Take on an empty queue gets nil, and the role is
// given up.
func TestTakeOnAnEmptyQueueGivesTheRoleUp(t *testing.T) {
	var q Queue[item, *item]
	requireTrue(t, q.Push(new(item)))
	requireTrue(t, q.Arrive())
	q.pop() // the holder emptied the queue
	got, start := q.Take()
	assertSame(t, got, nil, "an empty queue")
	assertTrue(t, !start, "nothing to start a goroutine for")
	assertWord(t, &q, 0, "free, nobody coming")
}

// Every pushed task is taken exactly once, by goroutines started only as the
// protocol says, whatever the interleaving of racing producers and
// finishing goroutines. Run with -race and several -cpu values.
func TestEveryPushedTaskIsTakenOnce(t *testing.T) {
	for _, producers := range []int{1, 4} {
		t.Run(fmt.Sprint("producers=", producers), func(t *testing.T) {
			var q Queue[item, *item]
			const perProducer = 2000
			taken := drive(&q, producers, perProducer)
			if taken != producers*perProducer {
				t.Fatalf("taken = %d, want %d", taken, producers*perProducer)
			}
			assertWord(t, &q, 0, "free, nobody coming once every goroutine ended")
		})
	}
}

// queue is the API the protocol driver and BenchmarkQueue use, so that the
// lock-free Queue and mutexQueue are driven by the same code.
type queue interface {
	Push(*item) bool
	Arrive() bool
	Claim() bool
	Take() (*item, bool)
}

// drive pushes producers×n items from producers goroutines and serves the
// queue as a caller would, and returns how many items were taken once every
// goroutine it started has ended.
func drive(q queue, producers, n int) int {
	var taken atomic.Int64
	var wg sync.WaitGroup
	var serve func()
	run := func(it *item) {
		if it.done.Add(1) != 1 {
			panic("item taken twice")
		}
		taken.Add(1)
	}
	work := func() {
		for {
			it, start := q.Take()
			if start {
				wg.Go(serve)
			}
			if it == nil {
				return
			}
			run(it)
			if !q.Claim() {
				return
			}
		}
	}
	serve = func() {
		if q.Arrive() {
			work()
		}
	}
	var pwg sync.WaitGroup
	for range producers {
		pwg.Go(func() {
			items := make([]item, n)
			for i := range items {
				if q.Push(&items[i]) {
					wg.Go(serve)
				}
			}
		})
	}
	pwg.Wait()
	wg.Wait()
	return int(taken.Load())
}

// BenchmarkQueue compares the lock-free Queue with mutexQueue, a plain
// mutex-guarded queue behind the same API, driven the same way: producers
// push trivial tasks and goroutines serve them as the executor's do.
func BenchmarkQueue(b *testing.B) {
	for _, producers := range []int{1, 4} {
		for _, impl := range []struct {
			name string
			new  func() queue
		}{
			{"lockfree", func() queue { return new(Queue[item, *item]) }},
			{"mutex", func() queue { return new(mutexQueue) }},
		} {
			b.Run(fmt.Sprintf("impl=%s/producers=%d", impl.name, producers), func(b *testing.B) {
				const batch = 1000
				b.ReportAllocs()
				for b.Loop() {
					drive(impl.new(), producers, batch/producers)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/task")
			})
		}
	}
}

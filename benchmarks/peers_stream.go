package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/alitto/pond/v2"
	"github.com/kobe/groupconc"
)

// StreamConfig is what a lossless stream asks of a peer. Each group runs
// at most PerGroup tasks at once. It holds at most Queue more waiting. Go
// waits for room rather than drop a task or let the backlog grow with the
// stream.
type StreamConfig struct {
	PerGroup int
	Queue    int
}

// StreamPeer is one library under comparison on a lossless stream.
type StreamPeer struct {
	Name string
	// Queues reports whether the peer holds up to Queue tasks of a group
	// waiting before Go blocks. If not, Go blocks as soon as PerGroup
	// tasks of the group run.
	Queues bool
	New    func(c StreamConfig) (Runner, error)
}

// StreamPeers lists the peers whose idiom bounds a stream's backlog by
// making the producer wait.
var StreamPeers = []StreamPeer{
	{"errgroup", false, newErrgroupStream},
	{"pond", true, newPondStream},
	{"groupconc", true, newGroupconcStream},
}

// ---- errgroup: an errgroup.Group per group, SetLimit, blocking Go ----------

// newErrgroupStream returns an errgroupPeer without a global limit. Go
// blocks while the group runs PerGroup tasks. So a producer stuck on one
// busy group feeds no other group meanwhile. This is head-of-line
// blocking, measured as is.
func newErrgroupStream(c StreamConfig) (Runner, error) {
	return newErrgroup(Config{PerGroup: c.PerGroup})
}

// ---- pond: a pool per group, queue size, blocking submission -----------------

// pondStream keeps a pond pool per group, of PerGroup workers and a queue
// of Queue tasks. With a queue size and without WithNonBlocking, pond's Go
// waits for room in the queue.
type pondStream struct {
	groups *groupMap[pond.Pool]
	wg     sync.WaitGroup
}

func newPondStream(c StreamConfig) (Runner, error) {
	return &pondStream{groups: newGroupMap(func() pond.Pool {
		return pond.NewPool(c.PerGroup, pond.WithQueueSize(c.Queue))
	})}, nil
}

func (r *pondStream) Go(group string, t *Task) error {
	r.wg.Add(1)
	err := r.groups.get(group).Go(func() {
		defer r.wg.Done()
		t.Fn()
	})
	if err != nil {
		r.wg.Done()
	}
	return err
}

func (r *pondStream) Wait() error { r.wg.Wait(); return nil }

func (r *pondStream) Close() {
	for _, p := range r.groups.values(true) {
		p.StopAndWait()
	}
}

// ---- groupconc: SubmitWith{Block: true} under a per-group threshold ---------

// groupconcStream submits with SubmitWith and Block set. Its groups have
// concurrency PerGroup and queue threshold Queue. It keeps no handle,
// since a stream of a million tasks must not hold a million handles. The
// task's function counts completion on a WaitGroup. Block must prevent a
// task from being turned away. If one is, the rejection handler counts it
// and Wait reports it.
type groupconcStream struct {
	e    *groupconc.GroupExecutor
	wg   sync.WaitGroup
	lost atomic.Int64

	last *Task // the Task fn wraps, so one closure per Task, not per call
	fn   groupconc.Task[struct{}]
}

func newGroupconcStream(c StreamConfig) (Runner, error) {
	r := &groupconcStream{}
	p, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(c.PerGroup).
		DefaultQueueThresholdPerGroup(c.Queue).
		RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) {
			r.lost.Add(1)
			r.wg.Done()
			return nil, groupconc.ErrRejected
		}).
		Build()
	if err != nil {
		return nil, err
	}
	r.e = groupconc.New(p)
	return r, nil
}

func (r *groupconcStream) Go(group string, t *Task) error {
	if t != r.last {
		r.last = t
		r.fn = func(ctx context.Context) (struct{}, error) {
			defer r.wg.Done()
			return t.Ctx(ctx)
		}
	}
	r.wg.Add(1)
	_, err := groupconc.SubmitWith(context.Background(), r.e, group, "t", r.fn, groupconc.SubmitOptions{Block: true})
	if err != nil {
		r.wg.Done()
	}
	return err
}

// errLost says that a blocking submission lost a task.
var errLost = errors.New("groupconc: tasks turned away under Block")

func (r *groupconcStream) Wait() error {
	r.wg.Wait()
	if n := r.lost.Swap(0); n > 0 {
		return fmt.Errorf("%w: %d", errLost, n)
	}
	return nil
}

func (r *groupconcStream) Close() { _ = r.e.Shutdown(context.Background()) }

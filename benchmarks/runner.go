package benchmarks

import (
	"context"
	"fmt"
	"sync"
)

// Config is what a workload asks of a peer.
type Config struct {
	// PerGroup bounds the tasks of one group running at once. Zero means
	// no limit.
	PerGroup int
	// Global bounds the tasks running at once over all groups. Zero means
	// no limit.
	Global int
	// Queue asks that Go return at once, even while a limit is reached.
	// The workload submits more tasks than the limits let run. It expects
	// the surplus to wait inside the peer, not on the caller.
	Queue bool
}

// limited reports whether c asks for any limit.
func (c Config) limited() bool { return c.PerGroup > 0 || c.Global > 0 }

// Task is one unit of work, in each of the shapes the peers take. A
// workload builds its tasks once, before it submits them. So no peer pays
// per task for adapting a signature its library does not use.
type Task struct {
	Fn  func()                                  // raw, semmap, pond, ants, conc
	Err func() error                            // errgroup
	Ctx func(context.Context) (struct{}, error) // groupconc.Task[struct{}]
}

// NewTask returns fn in every shape.
func NewTask(fn func()) *Task {
	return &Task{
		Fn:  fn,
		Err: func() error { fn(); return nil },
		Ctx: func(context.Context) (struct{}, error) { fn(); return struct{}{}, nil },
	}
}

// Runner runs tasks under the limits of the Config it was built with.
// Go, Wait and Close are called from one goroutine. The tasks run on the
// peer's goroutines.
type Runner interface {
	// Go hands t to the peer under group. It may block only if the peer's
	// idiom makes the caller wait for a free slot. Even then, it may
	// block only when the Config did not ask for Queue.
	Go(group string, t *Task) error
	// Wait blocks until every task handed to Go since the last Wait has
	// returned. It reports the first failure the peer saw.
	Wait() error
	// Close releases the peer's resources. Call it after Wait.
	Close()
}

// Peer is one library under comparison.
type Peer struct {
	Name string
	// New returns a Runner enforcing c. When the library cannot express
	// c, it returns an *UnsupportedError.
	New func(c Config) (Runner, error)
}

// Peers lists every peer, the floor (raw) first.
var Peers = []Peer{
	{"raw", newRaw},
	{"semmap", newSemMap},
	{"errgroup", newErrgroup},
	{"pond", newPond},
	{"ants", newAnts},
	{"conc", newConc},
	{"groupconc", newGroupconc},
	{"groupconc-fair", newGroupconcFair},
	{"groupconc-user", newGroupconcUser},
}

// UnsupportedError says why a peer cannot express a Config.
type UnsupportedError struct {
	Peer   string
	Reason string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s: unsupported: %s", e.Peer, e.Reason)
}

func unsupported(peer, reason string) error {
	return &UnsupportedError{Peer: peer, Reason: reason}
}

// groupMap is the per-group state of a peer, created on a group's first
// task. Lookups take a mutex, as a straightforward hand-written registry
// would.
type groupMap[T any] struct {
	create func() T
	mu     sync.Mutex
	m      map[string]T // guarded by mu
}

func newGroupMap[T any](create func() T) *groupMap[T] {
	return &groupMap[T]{create: create, m: make(map[string]T)}
}

func (g *groupMap[T]) get(key string) T {
	g.mu.Lock()
	v, ok := g.m[key]
	if !ok {
		v = g.create()
		g.m[key] = v
	}
	g.mu.Unlock()
	return v
}

// values returns every group's state. With reset it also forgets them all.
func (g *groupMap[T]) values(reset bool) []T {
	g.mu.Lock()
	defer g.mu.Unlock()
	vs := make([]T, 0, len(g.m))
	for _, v := range g.m {
		vs = append(vs, v)
	}
	if reset {
		clear(g.m)
	}
	return vs
}

package redisgc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("redisgc: coordinator closed")

// Coordinator keeps one replica's executor within its part of the fleet's
// limits. Create it with New, start it with Run, stop it with Close. Its
// methods are safe for concurrent use. Run does its work on the caller's
// goroutine, but for each Redis call. That runs on a goroutine of its own,
// which Run waits for before it returns. The zero value is not usable.
type Coordinator struct {
	client redis.Scripter
	target target
	opts   Options

	stop    chan struct{} // closed by Close
	runDone chan struct{} // closed when Run returns

	release     func() // uninstalls the executor's override guard, nil for other targets
	releaseOnce sync.Once

	mu      sync.Mutex
	closed  bool   // guarded by mu
	running bool   // Run was called (guarded by mu)
	status  Status // guarded by mu

	// Owned by Run's goroutine.
	member   string    // the lease's member ID, "" before joining and after losing it
	joining  string    // the ID of the joins sent while none is confirmed, reused by each
	joinSent time.Time // when the last of those joins was sent
	mode     Mode      // the lease's state
	deadline time.Time // when the lease may have expired, by the local monotonic clock
	// applyCost is how long the executor took to take new limits lately,
	// per group it remembered then; groups is how many it remembers now.
	// A fallback starts their product before the deadline (fallbackAt).
	applyCost time.Duration
	groups    int
	lastSync  time.Time        // the last successful sync
	pools     map[string]*pool // coordinated groups with a share or demand above 1
	global    *pool            // the global limit's pool, nil without a GlobalLimit
	lastErr   error            // the last sync's error
	call      *call            // the sync in flight, or nil.
	seq       uint64           // the last call's sequence number
	calls     sync.WaitGroup   // every call's goroutine.

	// onPublish, if set before Run, sees every status Run publishes.
	onPublish func(Status)
}

// pool is the replica's view of one fleet limit.
type pool struct {
	group   string // "" for the global limit
	key     string // its hash in Redis
	limit   int    // the fleet limit
	held    int    // the share Redis counts for this replica
	local   int    // the limit applied to the executor, never above held nor limit
	want    int    // the want Redis may hold: the last confirmed, or more sent since
	used    int    // the fleet's capacity in use, as last seen
	members int    // live replicas, as last seen
	// lastBusy is when the executor last had a task of the pool. An idle
	// pool keeps its share a RenewInterval, for a burst that comes back,
	// unless another replica is short.
	lastBusy time.Time
}

// isNilPointer reports whether v holds a nil pointer, such as a nil
// *redis.Client, which compares unequal to a nil interface.
func isNilPointer(v any) bool {
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}

// newCoordinator returns a Coordinator over t.
func newCoordinator(client redis.Scripter, t target, opts Options) (*Coordinator, error) {
	if client == nil || isNilPointer(client) {
		return nil, errors.New("redisgc: nil client")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.Name == "" {
		host, _ := os.Hostname()
		o.Name = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	c := &Coordinator{
		client:  client,
		target:  t,
		opts:    o,
		stop:    make(chan struct{}),
		runDone: make(chan struct{}),
		pools:   make(map[string]*pool),
	}
	if o.GlobalLimit > 0 {
		c.global = &pool{key: o.globalKey(), limit: o.GlobalLimit, held: 1, local: 1}
	}
	// Until it joins, the replica runs what every replica may run without
	// asking, which is 1 of each coordinated limit.
	if err := c.apply(); err != nil {
		return nil, err
	}
	c.publish()
	return c, nil
}

// Run coordinates until ctx ends or Close is called. It joins the fleet,
// then reads the executor's demand every SyncInterval. While the replica
// is busy, and every RenewInterval when idle, one Redis call renews its
// lease and settles its shares. Run applies any change to the executor's
// limits. It returns ErrClosed after Close, ctx.Err() when ctx
// ends, and an error if the executor refuses a policy (it was closed).
// Before returning it leaves the fleet: local limits drop to the fallback
// and Redis gets back what the executor is not running. If the executor
// is shut down, Run then waits for its tasks to end, no longer than the
// lease may live, and gives back the rest: so once the executor's Shutdown
// and Run have returned, Redis holds nothing of the replica. Run may be
// called once.
//
// No Redis call holds Run past the lease. When the lease's deadline comes
// before a call's reply, Run gives the call up and falls back, whatever the
// client's own timeouts. Before it returns, Run waits for the goroutine of
// each call it gave up. The client ends such a call at its own timeout
// (its ReadTimeout), or when it is closed: a client with no ReadTimeout
// holds Run on a link that hangs until the client is closed.
func (c *Coordinator) Run(ctx context.Context) error {
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return ErrClosed
	case c.running:
		c.mu.Unlock()
		return errors.New("redisgc: Run called twice")
	}
	c.running = true
	c.mu.Unlock()
	defer close(c.runDone)

	t := time.NewTimer(0)
	defer t.Stop()
	var err error
	for err == nil {
		var replies <-chan reply
		if c.call != nil {
			replies = c.call.done
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-c.stop:
			err = ErrClosed
		case r := <-replies:
			var now bool
			if now, err = c.settle(r); now {
				t.Reset(0)
			}
		case <-t.C:
			var next time.Duration
			next, err = c.step(ctx)
			t.Reset(next)
		}
		c.publish()
	}
	c.leave(context.WithoutCancel(ctx))
	c.mode = ModeStopped
	c.publish()
	c.calls.Wait()
	c.stopGuarding()
	return err
}

// stopGuarding lets the executor take overrides again, since the coordinator
// no longer sets its limits.
func (c *Coordinator) stopGuarding() {
	c.releaseOnce.Do(func() {
		if c.release != nil {
			c.release()
		}
	})
}

// Close stops Run and waits for it to return. Run waits for the Redis call
// in flight, then leaves the fleet with one more call. Both get a
// RenewInterval in all, and no more than the lease has left. If the
// executor is shut down, Run also waits for its tasks to end (see Run).
// Then Run waits for the goroutine of any call it gave up (see Run). From
// then on the executor takes overrides of coordinated groups' concurrency
// again. It is idempotent: every call, concurrent or not, returns only once
// Run has returned. A Run called after it returns ErrClosed at once.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
	}
	// A Run that has not started by now never will, as it sees closed.
	running := c.running
	c.mu.Unlock()
	if running {
		<-c.runDone
	}
	c.stopGuarding()
	return nil
}

// Status returns a snapshot of the replica's lease and shares.
func (c *Coordinator) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.status
	s.Groups = append([]Share(nil), s.Groups...)
	return s
}

// publish copies the loop's state into the status.
func (c *Coordinator) publish() {
	s := Status{Member: c.member, Mode: c.mode, LastSync: c.lastSync, Err: c.lastErr}
	for _, p := range c.pools {
		s.Groups = append(s.Groups, p.share())
	}
	if c.global != nil {
		s.Global = c.global.share()
	}
	c.mu.Lock()
	c.status = s
	c.mu.Unlock()
	if c.onPublish != nil {
		c.onPublish(s)
	}
}

// share is the public view of p.
func (p *pool) share() Share {
	return Share{Group: p.group, FleetLimit: p.limit, Share: p.held, Limit: p.local, FleetUsed: p.used, Members: p.members}
}

// newMemberID returns a member ID that no other lease has had. A replica
// that lost its lease joins again as a new member, so nothing the old one
// left in Redis counts for it.
func newMemberID(name string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return name + "/" + hex.EncodeToString(b[:])
}

package adapt_test

import (
	"context"
	"sync"
	"time"

	"github.com/kobe/groupconc"
)

// fcfs serves calls first come, first served, on a number of servers that
// may change: a connection pool, or a server with a pool of threads. A
// call waits in one line until a server is free, then holds it for its
// service time. A lowered capacity takes no call off its server: it
// applies as servers free up.
type fcfs struct {
	mu      sync.Mutex
	servers int           // guarded by mu
	serving []*call       // guarded by mu: the calls on a server
	line    []*call       // guarded by mu: the calls waiting, in order
	timer   *time.Timer   // guarded by mu: fires at the next completion
	epoch   time.Time     // fake time at the scenario's start
	busy    float64       // guarded by mu: server-nanoseconds spent
	stop    bool          // guarded by mu: no timer once the run is over
	abandon bool          // a call cancelled by its caller stays in the line
	fire    func()        // the timer's function
	last    time.Duration // guarded by mu: when busy was brought up to date
}

// call is one task's call to an fcfs backend.
type call struct {
	service time.Duration
	end     time.Duration // on a server: when it completes
	done    chan struct{}
}

func newFCFS(servers float64, abandon bool, epoch time.Time) *fcfs {
	b := &fcfs{servers: int(servers), epoch: epoch, abandon: abandon}
	b.fire = func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.tallyLocked()
		now := b.now()
		// One call completes per instant, the first of those due (see
		// backend's fire).
		first := -1
		for i, c := range b.serving {
			if c.end <= now && (first < 0 || c.end < b.serving[first].end) {
				first = i
			}
		}
		if first >= 0 {
			close(b.serving[first].done)
			b.serving = append(b.serving[:first], b.serving[first+1:]...)
		}
		b.startLocked()
		b.scheduleLocked()
	}
	return b
}

func (b *fcfs) now() time.Duration { return time.Since(b.epoch) }

// tallyLocked adds the server time spent since it was last called.
func (b *fcfs) tallyLocked() {
	now := b.now()
	b.busy += float64(now-b.last) * float64(len(b.serving))
	b.last = now
}

// startLocked puts the calls at the head of the line on the free servers.
func (b *fcfs) startLocked() {
	now := b.now()
	for len(b.serving) < b.servers && len(b.line) > 0 {
		c := b.line[0]
		b.line = b.line[1:]
		c.end = onGrid(now+c.service, offCompletion)
		b.serving = append(b.serving, c)
	}
}

// scheduleLocked sets the timer for the next completion.
func (b *fcfs) scheduleLocked() {
	if len(b.serving) == 0 || b.stop {
		return
	}
	next := b.serving[0].end
	for _, c := range b.serving[1:] {
		next = min(next, c.end)
	}
	now := b.now()
	if next <= now {
		next = onGrid(now+time.Nanosecond, offCompletion) // after the one that just completed
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(next-now, b.fire)
	} else {
		b.timer.Reset(next - now)
	}
}

// task is the executor's task for a call of service time work
// (nanoseconds): it waits for the call to complete, or, if its context
// ends first, returns; the call is then taken out of the line, unless
// the backend keeps abandoned calls.
func (b *fcfs) task(work float64) groupconc.Task[struct{}] {
	return func(ctx context.Context) (struct{}, error) {
		c := &call{service: time.Duration(work), done: make(chan struct{})}
		b.mu.Lock()
		b.tallyLocked()
		b.line = append(b.line, c)
		b.startLocked()
		b.scheduleLocked()
		b.mu.Unlock()
		select {
		case <-c.done:
			return struct{}{}, nil
		case <-ctx.Done():
			if !b.abandon {
				b.mu.Lock()
				for i, w := range b.line {
					if w == c {
						b.line = append(b.line[:i], b.line[i+1:]...)
						break
					}
				}
				b.mu.Unlock()
			}
			return struct{}{}, ctx.Err()
		}
	}
}

// setCores changes the number of servers from now on.
func (b *fcfs) setCores(c float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tallyLocked()
	b.servers = int(c)
	b.startLocked()
	b.scheduleLocked()
}

func (b *fcfs) capacity() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return float64(b.servers)
}

func (b *fcfs) spent() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.busy
}

// close stops the timer. Abandoned calls may still be in the line.
func (b *fcfs) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stop = true
	if b.timer != nil {
		b.timer.Stop()
	}
}

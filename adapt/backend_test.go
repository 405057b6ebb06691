package adapt_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/kobe/groupconc"
)

// backend serves jobs by processor sharing over a number of cores that
// may change: each of n jobs advances at min(1, cores/n) of real time.
type backend struct {
	mu    sync.Mutex
	cores float64       // guarded by mu
	jobs  []*job        // guarded by mu
	last  time.Duration // guarded by mu: when the jobs' work was brought up to date
	timer *time.Timer   // guarded by mu: fires at the next completion
	epoch time.Time     // fake time at the scenario's start
	busy  float64       // guarded by mu: core-nanoseconds spent, wasted or not
	fire  func()        // the timer's function
	stop  bool          // guarded by mu: no timer once the run is over
}

// job is one task's work in the backend.
type job struct {
	rem  float64 // nanoseconds of work left
	done chan struct{}
}

func newBackend(cores float64, epoch time.Time) *backend {
	b := &backend{cores: cores, epoch: epoch}
	b.fire = func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.advanceLocked()
		// One job completes per instant, the one with the least work
		// left (the first of equals): two tasks ending at once would
		// go on in an order the scheduler picks. Another one due now
		// completes a microsecond later.
		least := -1
		for i, j := range b.jobs {
			if j.rem <= 1e-3 && (least < 0 || j.rem < b.jobs[least].rem) {
				least = i
			}
		}
		if least >= 0 {
			close(b.jobs[least].done)
			b.jobs = slices.Delete(b.jobs, least, least+1)
		}
		b.scheduleLocked()
	}
	return b
}

func (b *backend) now() time.Duration { return time.Since(b.epoch) }

// rateLocked is how fast each job advances.
func (b *backend) rateLocked() float64 {
	return math.Min(1, b.cores/float64(len(b.jobs)))
}

// advanceLocked brings every job's work left up to now.
func (b *backend) advanceLocked() {
	now := b.now()
	if n := len(b.jobs); n > 0 {
		dt := float64(now - b.last)
		r := b.rateLocked()
		for _, j := range b.jobs {
			j.rem -= dt * r
		}
		b.busy += dt * r * float64(n)
	}
	b.last = now
}

// scheduleLocked sets the timer for the next completion.
func (b *backend) scheduleLocked() {
	if len(b.jobs) == 0 || b.stop {
		return
	}
	least := b.jobs[0].rem
	for _, j := range b.jobs[1:] {
		least = math.Min(least, j.rem)
	}
	now := b.now()
	at := onGrid(now+time.Duration(math.Ceil(math.Max(least, 0)/b.rateLocked())), offCompletion)
	if at <= now {
		at += time.Microsecond // one is due now: after the one that just completed
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(at-now, b.fire)
	} else {
		b.timer.Reset(at - now)
	}
}

// start puts work (nanoseconds of one core) in the backend.
func (b *backend) start(work float64) *job {
	j := &job{rem: work, done: make(chan struct{})}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked()
	b.jobs = append(b.jobs, j)
	b.scheduleLocked()
	return j
}

// abort takes j out, its work wasted, unless it completed meanwhile.
func (b *backend) abort(j *job) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked()
	if i := slices.Index(b.jobs, j); i >= 0 {
		b.jobs = slices.Delete(b.jobs, i, i+1)
	}
	b.scheduleLocked()
}

// setCores changes the capacity from now on.
func (b *backend) setCores(c float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked()
	b.cores = c
	b.scheduleLocked()
}

func (b *backend) capacity() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cores
}

func (b *backend) spent() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.busy
}

// close stops the timer; the run is over and no job is left.
func (b *backend) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stop = true
	if b.timer != nil {
		b.timer.Stop()
	}
}

// task is the executor's task for work: it runs in the backend until done
// or until its context ends (its deadline), which wastes the work done.
func (b *backend) task(work float64) groupconc.Task[struct{}] {
	return func(ctx context.Context) (struct{}, error) {
		j := b.start(work)
		select {
		case <-j.done:
			return struct{}{}, nil
		case <-ctx.Done():
			b.abort(j)
			return struct{}{}, ctx.Err()
		}
	}
}

package benchmarks

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alitto/pond/v2"
	"github.com/panjf2000/ants/v2"
	"github.com/sourcegraph/conc/pool"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
)

// ---- raw: a go statement and a WaitGroup, the floor -------------------------

type raw struct{ wg sync.WaitGroup }

func newRaw(c Config) (Runner, error) {
	if c.limited() {
		return nil, unsupported("raw", "no limits: a goroutine per task is the floor")
	}
	return &raw{}, nil
}

func (r *raw) Go(_ string, t *Task) error { r.wg.Go(t.Fn); return nil }
func (r *raw) Wait() error                { r.wg.Wait(); return nil }
func (r *raw) Close()                     {}

// ---- semmap: a goroutine per task, semaphore.Weighted per group + global ----

// semMap is the hand-written design groupconc competes with. It is a map
// of semaphores guarded by a mutex. Each task's goroutine acquires the
// global permit, then its group's. It releases them in reverse.
type semMap struct {
	global *semaphore.Weighted // nil means no global limit
	groups *groupMap[*semaphore.Weighted]
	wg     sync.WaitGroup
}

func newSemMap(c Config) (Runner, error) {
	r := &semMap{global: newWeighted(c.Global)}
	r.groups = newGroupMap(func() *semaphore.Weighted { return newWeighted(c.PerGroup) })
	return r, nil
}

func (r *semMap) Go(group string, t *Task) error {
	g, s := r.global, r.groups.get(group)
	r.wg.Go(func() {
		acquire(g)
		acquire(s)
		t.Fn()
		release(s)
		release(g)
	})
	return nil
}

func (r *semMap) Wait() error { r.wg.Wait(); return nil }
func (r *semMap) Close()      {}

func newWeighted(n int) *semaphore.Weighted {
	if n <= 0 {
		return nil
	}
	return semaphore.NewWeighted(int64(n))
}

// acquire takes one permit of s, if s limits anything. Its context never
// ends, so it cannot fail.
func acquire(s *semaphore.Weighted) {
	if s != nil {
		_ = s.Acquire(context.Background(), 1)
	}
}

func release(s *semaphore.Weighted) {
	if s != nil {
		s.Release(1)
	}
}

// ---- errgroup: an errgroup.Group per group with SetLimit ---------------------

// errgroupPeer runs each group in an errgroup.Group limited with SetLimit.
// A global limit is a semaphore. The task's goroutine acquires it once
// errgroup has started the goroutine. errgroup's Go blocks the caller while
// the group is full.
type errgroupPeer struct {
	global *semaphore.Weighted
	groups *groupMap[*errgroup.Group]
}

func newErrgroup(c Config) (Runner, error) {
	if c.Queue && c.PerGroup > 0 {
		return nil, unsupported("errgroup", "Go blocks the caller while the group is at its limit: no queue")
	}
	r := &errgroupPeer{global: newWeighted(c.Global)}
	r.groups = newGroupMap(func() *errgroup.Group {
		g := new(errgroup.Group)
		if c.PerGroup > 0 {
			g.SetLimit(c.PerGroup)
		}
		return g
	})
	return r, nil
}

func (r *errgroupPeer) Go(group string, t *Task) error {
	g := r.groups.get(group)
	if r.global == nil {
		g.Go(t.Err)
		return nil
	}
	s := r.global
	g.Go(func() error {
		acquire(s)
		defer release(s)
		return t.Err()
	})
	return nil
}

func (r *errgroupPeer) Wait() error {
	var first error
	for _, g := range r.groups.values(false) {
		if err := g.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (r *errgroupPeer) Close() {}

// ---- pond: one pool (the global limit) and a subpool per group ---------------

// pondPeer submits with Go (no future per task) and waits with a WaitGroup.
// A pond subpool queues what it cannot run yet, so Go never blocks.
type pondPeer struct {
	pool   pond.Pool
	groups *groupMap[pond.Pool]
	wg     sync.WaitGroup
}

func newPond(c Config) (Runner, error) {
	r := &pondPeer{pool: pond.NewPool(c.Global)} // 0 means no limit
	r.groups = newGroupMap(func() pond.Pool {
		if c.PerGroup > 0 {
			return r.pool.NewSubpool(c.PerGroup)
		}
		return r.pool
	})
	return r, nil
}

func (r *pondPeer) Go(group string, t *Task) error {
	p := r.groups.get(group)
	r.wg.Add(1)
	err := p.Go(func() {
		defer r.wg.Done()
		t.Fn()
	})
	if err != nil {
		r.wg.Done()
	}
	return err
}

func (r *pondPeer) Wait() error { r.wg.Wait(); return nil }

func (r *pondPeer) Close() {
	for _, p := range r.groups.values(true) {
		if p != r.pool {
			p.StopAndWait()
		}
	}
	r.pool.StopAndWait()
}

// ---- ants: a pool per group, sized to the group's limit -----------------------

// antsPeer keeps an ants.Pool per group, with ants' default options. A
// global limit is a semaphore acquired inside the pooled function. Submit
// blocks the caller while the group's pool has no free worker.
type antsPeer struct {
	global *semaphore.Weighted
	groups *groupMap[*ants.Pool]
	wg     sync.WaitGroup
}

func newAnts(c Config) (Runner, error) {
	if c.Queue && c.PerGroup > 0 {
		return nil, unsupported("ants", "Submit blocks the caller while the group's pool is full (WithNonblocking rejects instead): no queue")
	}
	r := &antsPeer{global: newWeighted(c.Global)}
	size := c.PerGroup
	if size <= 0 {
		size = -1 // unlimited
	}
	r.groups = newGroupMap(func() *ants.Pool {
		p, err := ants.NewPool(size)
		if err != nil {
			panic(fmt.Sprintf("ants.NewPool(%d): %v", size, err)) // fixed options, so a harness bug
		}
		return p
	})
	return r, nil
}

func (r *antsPeer) Go(group string, t *Task) error {
	p, s := r.groups.get(group), r.global
	r.wg.Add(1)
	err := p.Submit(func() {
		defer r.wg.Done()
		acquire(s)
		t.Fn()
		release(s)
	})
	if err != nil {
		r.wg.Done()
	}
	return err
}

func (r *antsPeer) Wait() error { r.wg.Wait(); return nil }

func (r *antsPeer) Close() {
	for _, p := range r.groups.values(true) {
		_ = p.ReleaseTimeout(10 * time.Second) // waits for its workers and tickers
	}
}

// ---- conc: a pool.Pool per group with WithMaxGoroutines ----------------------

// concPeer keeps a conc pool per group. A conc pool is used once. Wait
// ends it, so the next batch creates new pools. conc has no limit shared
// by several pools. Its Go blocks the caller while the pool is full.
type concPeer struct {
	groups *groupMap[*pool.Pool]
}

func newConc(c Config) (Runner, error) {
	switch {
	case c.Global > 0:
		return nil, unsupported("conc", "no limit shared by several pools")
	case c.Queue && c.PerGroup > 0:
		return nil, unsupported("conc", "Go blocks the caller while the pool is at its limit: no queue")
	}
	return &concPeer{groups: newGroupMap(func() *pool.Pool {
		p := pool.New()
		if c.PerGroup > 0 {
			p = p.WithMaxGoroutines(c.PerGroup)
		}
		return p
	})}, nil
}

func (r *concPeer) Go(group string, t *Task) error { r.groups.get(group).Go(t.Fn); return nil }

func (r *concPeer) Wait() error {
	for _, p := range r.groups.values(true) {
		p.Wait()
	}
	return nil
}

func (r *concPeer) Close() {}

package benchmarks

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/kobe/groupconc"
)

// ---- groupconc: Submit, keep the handles, Wait on each ----------------------

type groupconcPeer struct {
	e       *groupconc.GroupExecutor
	handles []*groupconc.TaskHandle[struct{}]
}

func newGroupconc(c Config) (Runner, error) {
	return newGroupconcPeer(c, groupconc.IsolationOff, nil)
}

// newGroupconcFair is the groupconc peer under IsolationFairShare.
func newGroupconcFair(c Config) (Runner, error) {
	return newGroupconcPeer(c, groupconc.IsolationFairShare, nil)
}

// newGroupconcListening is newGroupconc with l installed as the executor's
// listener (none if nil).
func newGroupconcListening(c Config, l groupconc.TaskLifecycleListener) (Runner, error) {
	return newGroupconcPeer(c, groupconc.IsolationOff, l)
}

// newGroupconcAdaptive is newGroupconc whose groups' limits adapt as a
// says. If a.New is nil, they do not adapt.
func newGroupconcAdaptive(c Config, a groupconc.AdaptiveConfig) (Runner, error) {
	return newGroupconcPeer(c, groupconc.IsolationOff, nil, func(b *groupconc.PolicyBuilder) {
		if a.New != nil {
			b.AdaptiveConcurrency(a)
		}
	})
}

func newGroupconcPeer(c Config, mode groupconc.IsolationMode, l groupconc.TaskLifecycleListener, more ...func(*groupconc.PolicyBuilder)) (Runner, error) {
	per, global := groupconc.Unlimited, groupconc.Unlimited
	if c.PerGroup > 0 {
		per = c.PerGroup
	}
	if c.Global > 0 {
		global = c.Global
	}
	b := groupconc.NewPolicyBuilder().
		Isolation(mode).
		DefaultMaxConcurrencyPerGroup(per).
		GlobalMaxInFlight(global).
		TaskLifecycleListener(l)
	for _, f := range more {
		f(b)
	}
	p, err := b.Build()
	if err != nil {
		return nil, err
	}
	return &groupconcPeer{e: groupconc.New(p)}, nil
}

func (r *groupconcPeer) Go(group string, t *Task) error {
	h, err := groupconc.Submit(context.Background(), r.e, group, "t", t.Ctx)
	if err != nil {
		return err
	}
	r.handles = append(r.handles, h)
	return nil
}

func (r *groupconcPeer) Wait() error {
	var first error
	for _, h := range r.handles {
		if res := h.Wait(); res.Status != groupconc.StatusSuccess && first == nil {
			first = fmt.Errorf("groupconc: task ended %v: %w", res.Status, res.Err)
		}
	}
	clear(r.handles)
	r.handles = r.handles[:0]
	return first
}

// Close shuts the executor down. Its context never ends, so Shutdown
// waits for every task and returns nil.
func (r *groupconcPeer) Close() { _ = r.e.Shutdown(context.Background()) }

// ---- groupconc-user: as user code calls it -----------------------------------

// groupconcUser submits as application code does. It makes an ID per task
// with strconv. It wraps the work in a closure per task, which counts
// completion on a sync.WaitGroup. Wait waits on that WaitGroup rather than
// on the handles.
type groupconcUser struct {
	e    *groupconc.GroupExecutor
	wg   sync.WaitGroup
	next int
	err  atomic.Pointer[error]
}

func newGroupconcUser(c Config) (Runner, error) {
	r, err := newGroupconcPeer(c, groupconc.IsolationOff, nil)
	if err != nil {
		return nil, err
	}
	return &groupconcUser{e: r.(*groupconcPeer).e}, nil
}

func (r *groupconcUser) Go(group string, t *Task) error {
	r.next++
	r.wg.Add(1)
	_, err := groupconc.Submit(context.Background(), r.e, group, "task-"+strconv.Itoa(r.next),
		func(ctx context.Context) (struct{}, error) {
			defer r.wg.Done()
			v, err := t.Ctx(ctx)
			if err != nil {
				first := err // own variable, so no allocation unless it fails
				r.err.CompareAndSwap(nil, &first)
			}
			return v, err
		})
	if err != nil {
		r.wg.Done()
	}
	return err
}

func (r *groupconcUser) Wait() error {
	r.wg.Wait()
	if err := r.err.Load(); err != nil {
		return *err
	}
	return nil
}

func (r *groupconcUser) Close() { _ = r.e.Shutdown(context.Background()) }

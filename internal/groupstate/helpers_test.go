package groupstate

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tk is a task as the executor keeps one: its Permits inside it.
type tk struct {
	p    Permits[tk]
	name string
}

// fixture is a registry over one global layer, with a settable clock.
type fixture struct {
	gl  *Global[tk]
	r   *Registry[tk]
	now int64
}

func newFixture(t *testing.T, global int, fair bool, limits func(key string) Limits) *fixture {
	t.Helper()
	return newQueuedFixture(t, global, Unlimited, fair, limits)
}

// newQueuedFixture is newFixture with a global queue of queue slots.
func newQueuedFixture(t *testing.T, global, queue int, fair bool, limits func(key string) Limits) *fixture {
	t.Helper()
	f := &fixture{gl: NewGlobal[tk](global, queue, fair)}
	f.r = NewRegistry(context.Background(), f.gl, limits, func() int64 { return f.now })
	return f
}

func fixed(l Limits) func(string) Limits { return func(string) Limits { return l } }

// submit gets key's group, inits a task in it and tries it.
func (f *fixture) submit(t *testing.T, key, name string) (*tk, Outcome) {
	t.Helper()
	return f.submitPrio(t, key, name, PriorityDefault)
}

// submitPrio is submit for a task of priority prio.
func (f *fixture) submitPrio(t *testing.T, key, name string, prio uint8) (*tk, Outcome) {
	t.Helper()
	k := &tk{name: name}
	f.r.Enter(key, &k.p, k, f.now)
	k.p.SetPriority(prio)
	out, _ := k.p.Try()
	return k, out
}

// extended has f's tasks that need an Ext (a parent, a cost) get one, as
// the executor does. It returns submit for such tasks: it stamps a task at
// f.now, and tries it.
func (f *fixture) extended() func(key, name string) (*tk, Outcome) {
	try := f.costing()
	return func(key, name string) (*tk, Outcome) { return try(key, name, 1) }
}

// costing is extended for tasks of any cost.
func (f *fixture) costing() func(key, name string, cost int) (*tk, Outcome) {
	exts := map[*tk]*Ext{}
	f.gl.SetExt(func(k *tk) *Ext { return exts[k] })
	return func(key, name string, cost int) (*tk, Outcome) {
		k := &tk{name: name}
		f.r.Enter(key, &k.p, k, f.now)
		if k.p.NeedsExt(cost) {
			exts[k] = new(Ext)
			k.p.Extend(exts[k], cost)
		}
		out, _ := k.p.Try()
		return k, out
	}
}

// stepping returns what submits a task as extended's does, checks its
// outcome and moves f's clock on, so that each task is younger.
func (f *fixture) stepping(t *testing.T) func(key, name string, want Outcome) *tk {
	try := f.extended()
	return func(key, name string, want Outcome) *tk {
		t.Helper()
		k, out := try(key, name)
		require.Equal(t, want, out, name)
		f.now++
		return k
	}
}

// end releases k, resumes every task handed a permit and returns the names
// of those admitted, in hand-off order.
func (f *fixture) end(t *testing.T, k *tk) []string {
	t.Helper()
	k.p.Release()
	k.p.Exit()
	var hs []*tk
	for h := k.p.Handed(); h != nil; h = k.p.Handed() {
		hs = append(hs, h)
	}
	return resume(hs)
}

// resume resumes handed tasks and returns the names of those admitted. A
// task whose turn comes as one's walk stops is resumed next. Those a walk
// sent back handed on (see sendBack) are resumed after the rest.
func resume(hs []*tk) []string {
	var admitted []string
	for i := 0; i < len(hs); i++ {
		for h := hs[i]; h != nil; {
			out, _, next, moved := h.p.Resume()
			if out == Admitted {
				admitted = append(admitted, h.name)
			}
			if moved != nil {
				hs = append(hs, moved.Handed...)
			}
			h = next
		}
	}
	return admitted
}

// quiet reports an error unless every permit, slot and count of the global
// layer and of gs is back to zero.
func quiet(gl *Global[tk], gs ...*Group[tk]) error {
	running, waiting, inFlight := gl.Counts()
	if _, slots := gl.Held(); running|waiting|inFlight|slots != 0 {
		return fmt.Errorf("global: running %d waiting %d in flight %d slots %d", running, waiting, inFlight, slots)
	}
	if n := gl.queue.waiting.Load(); n != 0 {
		return fmt.Errorf("global: %d callers counted waiting for a slot", n)
	}
	if n := gl.line.waiting.Load(); n != 0 {
		return fmt.Errorf("global: %d tasks counted waiting in line", n)
	}
	for _, g := range gs {
		b, c, s := g.Held()
		_, waiting, _ := g.Counts()
		if b|c|s|waiting != 0 || g.OldestWait(0) != 0 {
			return fmt.Errorf("group %s: bulkhead %d conc %d slots %d waiting %d", g.key, b, c, s, waiting)
		}
		if n := g.queue.waiting.Load(); n != 0 {
			return fmt.Errorf("group %s: %d callers counted waiting for a slot", g.key, n)
		}
		if n := g.conc.waiting.Load() + g.bulkhead.waiting.Load(); n != 0 {
			return fmt.Errorf("group %s: %d tasks counted waiting in line", g.key, n)
		}
		if running, _, inFlight := g.Counts(); running|inFlight != 0 {
			return fmt.Errorf("group %s: running %d in flight %d", g.key, running, inFlight)
		}
		if f := g.fair; f != nil && f.running.Load()|f.below.Load()|f.handed.Load() != 0 {
			return fmt.Errorf("group %s: fair share counts %d running, %d below, %d handed", g.key, f.running.Load(), f.below.Load(), f.handed.Load())
		}
		if k := g.kin.Load(); k != nil {
			if b, c := k.held[0].Load(), k.held[1].Load(); b|c != 0 {
				return fmt.Errorf("group %s: its subtree holds %d of its parent's bulkhead and %d of its concurrency", g.key, b, c)
			}
			for name, n := range map[string]int64{"extra": k.extra.Load(), "run": k.run.Load(), "over": k.over.Load(), "subCost": k.subCost.Load(), "bulk": k.bulk.Load()} {
				if n != 0 {
					return fmt.Errorf("group %s: its family counts %s %d", g.key, name, n)
				}
			}
		}
	}
	return nil
}

func requireQuiet(t *testing.T, gl *Global[tk], gs ...*Group[tk]) {
	t.Helper()
	require.NoError(t, quiet(gl, gs...))
}

// requireQuietKeys is requireQuiet for the global layer and the groups of
// keys, each of which must be known.
func (f *fixture) requireQuietKeys(t *testing.T, keys ...string) {
	t.Helper()
	var gs []*Group[tk]
	for _, key := range keys {
		g, ok := f.r.Lookup(key)
		require.True(t, ok, key)
		gs = append(gs, g)
	}
	requireQuiet(t, f.gl, gs...)
}

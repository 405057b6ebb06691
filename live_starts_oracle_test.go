package groupconc_test

// The start oracle of TestLiveTreeStartsFitTheLimitsInForce. It knows the
// limits in force at every moment and checks each start against them alone.
// A task that runs over a lowered limit may go on (it drains), but no task
// may start at a layer that holds its limit or more.

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/kobe/groupconc"
)

// liveLimits are the settings a policy of the test is built from. Every key
// has its concurrency and bulkhead in the maps.
type liveLimits struct {
	global, globalQueue           int
	conc, inFlight, queue, weight map[string]int
	reject                        groupconc.RejectionPolicy
}

func (l liveLimits) clone() liveLimits {
	l.conc, l.inFlight = maps.Clone(l.conc), maps.Clone(l.inFlight)
	l.queue, l.weight = maps.Clone(l.queue), maps.Clone(l.weight)
	return l
}

// policy builds l under mode, with parents (if any) given by a
// ParentResolver.
func (l liveLimits) policy(t *testing.T, mode groupconc.IsolationMode, parents map[string]string) *groupconc.GroupPolicy {
	b := builder().Isolation(mode)
	if len(parents) > 0 { // else tasks of cost 1 take the flat groups' fast paths
		b.ParentResolver(func(k string) string { return parents[k] })
	}
	b.GlobalMaxInFlight(l.global).PerGroupMaxConcurrency(l.conc).PerGroupMaxInFlight(l.inFlight).
		PerGroupQueueThreshold(l.queue).RejectionPolicy(l.reject)
	if mode == groupconc.IsolationOff {
		b.GlobalQueueThreshold(l.globalQueue)
	} else {
		b.PerGroupWeight(l.weight)
	}
	return mustBuild(t, b)
}

// liveScope is a group as the oracle knows it: its key, and how many times
// the key was evicted before the group was made.
type liveScope struct {
	key string
	gen int
}

// liveTask is a gated task of the test: its function records its start,
// waits for its gate (and for its context, unless it ignores it), and
// records its end.
type liveTask struct {
	key    string
	cost   int
	deaf   bool        // ignores its context
	chain  []liveScope // its group and its ancestors, nearest first
	gate   chan struct{}
	once   sync.Once
	layers []string // set when it starts
	held   []int
}

func (x *liveTask) release() { x.once.Do(func() { close(x.gate) }) }

// liveOracle is what is in force, and what the running functions hold.
type liveOracle struct {
	mu      sync.Mutex
	lim     liveLimits
	over    map[string]groupconc.GroupOverride
	parents map[string]string
	gen     map[string]int
	held    map[string]int // layer -> permits held by running functions, at least
	running []*liveTask
	errs    []string

	// While changes run at once, a start may come before or after each, so
	// it is checked against the more generous of the limits and overrides
	// in force before (prev) and now.
	prev     *liveLimits
	prevOver map[string]groupconc.GroupOverride
	prevGen  map[string]int
}

func newLiveOracle(lim liveLimits, parents map[string]string) *liveOracle {
	return &liveOracle{lim: lim, parents: parents, over: map[string]groupconc.GroupOverride{},
		gen: map[string]int{}, held: map[string]int{}}
}

// chainOf returns key's group and ancestors as they are now.
func (o *liveOracle) chainOf(key string) []liveScope {
	o.mu.Lock()
	defer o.mu.Unlock()
	var c []liveScope
	for k := key; k != ""; k = o.parents[k] {
		c = append(c, liveScope{k, o.gen[k]})
	}
	return c
}

// loosen begins a step of changes made at once: until tighten, starts are
// checked against the limits now or those the changes set, the higher.
func (o *liveOracle) loosen() {
	o.mu.Lock()
	defer o.mu.Unlock()
	prev := o.lim.clone()
	o.prev, o.prevOver, o.prevGen = &prev, maps.Clone(o.over), maps.Clone(o.gen)
}

func (o *liveOracle) tighten() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.prev, o.prevOver, o.prevGen = nil, nil, nil
}

// limitsLocked returns key's concurrency limit and bulkhead in force.
func (o *liveOracle) limitsLocked(key string) (conc, inFlight int) {
	conc, inFlight = liveLimitsOf(&o.lim, o.over, key)
	if o.prev == nil {
		return conc, inFlight
	}
	// Either change may come first: each mix of before and after.
	for _, l := range []*liveLimits{&o.lim, o.prev} {
		for _, over := range []map[string]groupconc.GroupOverride{o.over, o.prevOver} {
			c, b := liveLimitsOf(l, over, key)
			conc, inFlight = max(conc, c), max(inFlight, b)
		}
	}
	return conc, inFlight
}

func (o *liveOracle) globalLocked() int {
	if o.prev != nil {
		return max(o.lim.global, o.prev.global)
	}
	return o.lim.global
}

func liveLimitsOf(l *liveLimits, over map[string]groupconc.GroupOverride, key string) (conc, inFlight int) {
	conc, inFlight = l.conc[key], l.inFlight[key]
	ov := over[key]
	if ov.MaxConcurrency != nil {
		conc = *ov.MaxConcurrency
	}
	if ov.MaxInFlight != nil {
		inFlight = *ov.MaxInFlight
	}
	return conc, inFlight
}

// pausedLocked reports whether key or an ancestor is paused (while loose:
// one that was paused before the changes and is still).
func (o *liveOracle) pausedLocked(key string) bool {
	paused := func(over map[string]groupconc.GroupOverride, k string) bool {
		p := over[k].Paused
		return p != nil && *p
	}
	for k := key; k != ""; k = o.parents[k] {
		if paused(o.over, k) && (o.prev == nil || paused(o.prevOver, k)) {
			return true
		}
	}
	return false
}

// start records x's function starting and checks that each layer of its
// chain had room for it under the limits in force now. At each layer x
// holds its cost, or the whole limit if that is less. A raise may top up
// a task holding a whole limit, so what is counted is a lower bound. So is
// the count of a task that ends: it leaves before its permits go back.
func (o *liveOracle) start(x *liveTask) {
	o.mu.Lock()
	defer o.mu.Unlock()
	take := func(layer string, limit int) {
		h := x.cost
		if limit != groupconc.Unlimited {
			h = min(x.cost, limit)
			if o.held[layer]+h > limit {
				o.failLocked("a task of %q of cost %d started at %s holding %d permits, limit %d", x.key, x.cost, layer, o.held[layer], limit)
			}
		}
		o.held[layer] += h
		x.layers, x.held = append(x.layers, layer), append(x.held, h)
	}
	take("global", o.globalLocked())
	for _, s := range x.chain {
		if s.gen != o.gen[s.key] && (o.prev == nil || s.gen != o.prevGen[s.key]) {
			o.failLocked("a task of %q started in group %q evicted since it was submitted", x.key, s.key)
			continue
		}
		conc, inFlight := o.limitsLocked(s.key)
		take(fmt.Sprintf("%s#%d concurrency", s.key, s.gen), conc)
		take(fmt.Sprintf("%s#%d bulkhead", s.key, s.gen), inFlight)
	}
	if o.pausedLocked(x.key) {
		o.failLocked("a task of %q started under a pause", x.key)
	}
	o.running = append(o.running, x)
}

// end records x's function ending.
func (o *liveOracle) end(x *liveTask) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, l := range x.layers {
		o.held[l] -= x.held[i]
	}
	o.running = slices.DeleteFunc(o.running, func(y *liveTask) bool { return y == x })
}

func (o *liveOracle) failLocked(format string, args ...any) {
	if len(o.errs) < 10 {
		o.errs = append(o.errs, fmt.Sprintf(format, args...))
	}
}

// check reports the oracle's failures, and checks the stats of every known
// key against the limits in force and the functions running.
func (o *liveOracle) check(t *testing.T, e *groupconc.GroupExecutor, keys []string) bool {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	ok := len(o.errs) == 0
	for _, err := range o.errs {
		t.Error(err)
	}
	o.errs = nil
	if s := e.Stats(); s.Running != len(o.running) {
		t.Errorf("Stats().Running is %d, want %d", s.Running, len(o.running))
		ok = false
	}
	for _, k := range keys {
		gs, found := e.GroupStats(k)
		if !found {
			continue
		}
		conc, inFlight := o.limitsLocked(k)
		n := 0
		for _, x := range o.running {
			if slices.Contains(x.chain, liveScope{k, o.gen[k]}) {
				n++
			}
		}
		if gs.MaxConcurrency != conc || gs.MaxInFlight != inFlight || gs.Paused != o.pausedLocked(k) || gs.Running != n {
			t.Errorf("group %q: stats %+v, want limits %d and %d, paused %v, running %d", k, gs, conc, inFlight, o.pausedLocked(k), n)
			ok = false
		}
	}
	return ok
}

// overOf returns key's override in force.
func (o *liveOracle) overOf(key string) groupconc.GroupOverride {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.over[key]
}

// evict makes key's subtree new groups, with no override.
func (o *liveOracle) evict(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.lim.conc {
		for a := k; a != ""; a = o.parents[a] {
			if a == key {
				o.gen[k]++
				delete(o.over, k)
				break
			}
		}
	}
}

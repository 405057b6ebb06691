package groupconc_test

// The steps of TestLiveTreeStartsFitTheLimitsInForce: the trees, the
// settings, and the changes made to them.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// submit submits a gated task of a random key, cost and priority, under a
// random context, and returns what it did.
func (r *liveRun) submit(k string, block, now bool) string {
	rng := r.rng
	x := &liveTask{key: k, cost: 1 + rng.IntN(r.maxCost), deaf: rng.IntN(2) == 0, chain: r.o.chainOf(k), gate: make(chan struct{})}
	r.tasks = append(r.tasks, x)
	c := rng.IntN(len(r.ctxs) + 1)
	ctx := context.Background()
	if c < len(r.ctxs) {
		ctx = r.ctxs[c]
	}
	opts := groupconc.SubmitOptions{Cost: x.cost, Priority: groupconc.Priority(1 + rng.IntN(5)), Block: block}
	if block && rng.IntN(2) == 0 {
		opts.MaxWait = time.Duration(1+rng.IntN(3)) * time.Second
	}
	id := fmt.Sprintf("s%d.%d", r.step, len(r.tasks))
	do := func() {
		h, err := groupconc.SubmitWith(ctx, r.e, k, id, r.fnOf(x), opts)
		if !block {
			assert.NoError(r.t, err) // on a goroutine of its own, at times
		}
		if err == nil {
			r.mu.Lock()
			r.hs, r.ran[h] = append(r.hs, h), x
			r.mu.Unlock()
		}
	}
	switch {
	case block:
		r.calls.Go(do)
	case now:
		do()
	default:
		r.together.Go(do)
	}
	return fmt.Sprintf("submit %s cost %d %+v ctx %d deaf %v", k, x.cost, opts, c, x.deaf)
}

// fnOf returns x's function: it records its start, waits for its gate, or
// for its context too unless deaf, and records its end.
func (r *liveRun) fnOf(x *liveTask) groupconc.Task[int] {
	return func(ctx context.Context) (int, error) {
		r.o.start(x)
		r.mu.Lock()
		r.started[x] = true
		r.mu.Unlock()
		defer r.o.end(x)
		if x.deaf {
			<-x.gate
			return 1, nil
		}
		select {
		case <-x.gate:
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// liveKind is a kind of step.
type liveKind int

const (
	liveSubmit    liveKind = iota // a gated task is submitted
	liveBlock                     // one is submitted by a blocking caller
	liveRelease                   // a running task's gate opens
	liveUpdate                    // UpdatePolicy, changing one to three settings
	liveOverride                  // a group's concurrency override is set or dropped
	livePause                     // a group is paused or resumed
	liveCancel                    // a handle is cancelled
	liveCancelCtx                 // a context of callers is cancelled
	liveShutdown                  // ShutdownGroup
	liveEvict                     // EvictGroup
	liveSleep                     // fake time passes
	liveKinds
)

// liveOps are the odds of the steps made alone.
var liveOps = []liveKind{liveSubmit, liveSubmit, liveSubmit, liveSubmit, liveSubmit, liveBlock,
	liveRelease, liveRelease, liveRelease, liveRelease, liveUpdate, liveUpdate, liveOverride, livePause,
	liveCancel, liveCancelCtx, liveShutdown, liveEvict, liveSleep, liveUpdate}

// clashes reports whether a and b may not be made at once: the oracle
// could not tell which came first where it must.
func (a liveKind) clashes(b liveKind) bool {
	stops := func(k liveKind) bool { return k == liveEvict || k == liveShutdown || k == liveCancelCtx }
	sets := func(k liveKind) bool { return k == liveOverride || k == livePause }
	return a == liveUpdate && b == liveUpdate ||
		stops(a) && sets(b) || stops(b) && sets(a) ||
		a == liveEvict && (b == liveSubmit || b == liveBlock) || b == liveEvict && (a == liveSubmit || a == liveBlock)
}

// change makes a change of kind to key k, at once, or (now false) on a
// goroutine of r.together, and returns what it does. It tells the oracle
// of a change of limits just before the call that makes it.
func (r *liveRun) change(kind liveKind, k string, now bool) string {
	rng := r.rng
	var what string
	var do func()
	_, known := r.e.GroupStats(k)
	switch kind {
	case liveSubmit, liveBlock:
		return r.submit(k, kind == liveBlock, now)
	case liveSleep:
		d := time.Duration(1+rng.IntN(2000)) * time.Millisecond
		what, do = "sleep", func() { time.Sleep(d) } // fake clock: inside the bubble
	case liveShutdown:
		what, do = "shutdown "+k, func() { r.e.ShutdownGroup(k) }
	case liveEvict:
		what, do = "evict "+k, func() { r.o.evict(k); r.e.EvictGroup(k) }
	case liveCancelCtx:
		c := rng.IntN(len(r.ctxs))
		what, do = fmt.Sprint("cancel ctx ", c), r.cancels[c]
		r.ctxs[c], r.cancels[c] = context.WithCancel(context.Background())
	case liveRelease:
		r.o.mu.Lock()
		if n := len(r.o.running); n > 0 {
			x := r.o.running[rng.IntN(n)]
			what, do = "release a task of "+x.key, x.release
		}
		r.o.mu.Unlock()
	case liveUpdate:
		for range 1 + rng.IntN(3) {
			liveChange(rng, &r.lim, r.keys, r.mode)
		}
		lim := r.lim.clone()
		p := lim.policy(r.t, r.mode, r.parents)
		what = fmt.Sprintf("update %+v", lim)
		do = func() {
			r.o.mu.Lock()
			r.o.lim = lim
			r.o.mu.Unlock()
			assert.NoError(r.t, r.e.UpdatePolicy(p))
		}
	case liveOverride, livePause:
		if !known {
			break
		}
		ov := r.o.overOf(k)
		if kind == livePause {
			paused := ov.Paused == nil || !*ov.Paused
			ov.Paused = &paused
			what = fmt.Sprintf("pause %s %v", k, paused)
		} else {
			ov.MaxConcurrency = nil
			if rng.IntN(3) != 0 {
				n := liveRandom(rng, 1, 4, 0)
				ov.MaxConcurrency = &n
			}
			what = fmt.Sprintf("override %s concurrency %s", k, liveInt(ov.MaxConcurrency))
		}
		do = func() { r.setOverride(k, ov) }
	case liveCancel:
		r.mu.Lock()
		if len(r.hs) > 0 {
			h := r.hs[rng.IntN(len(r.hs))]
			what, do = "cancel handle "+h.TaskID(), func() { h.Cancel() }
		}
		r.mu.Unlock()
	}
	switch {
	case do == nil:
	case now:
		do()
	default:
		r.together.Go(do)
	}
	return what
}

// setOverride sets k's override, the oracle's first.
func (r *liveRun) setOverride(k string, ov groupconc.GroupOverride) {
	o := r.o
	o.mu.Lock()
	was := o.over[k]
	o.over[k] = ov
	o.mu.Unlock()
	if err := r.e.SetGroupOverride(k, ov); err != nil {
		o.mu.Lock()
		o.over[k] = was
		o.mu.Unlock()
	}
}

// liveInt shows an override's limit: a number, or "none".
func liveInt(n *int) string {
	if n == nil {
		return "none"
	}
	return strconv.Itoa(*n)
}

// liveTree returns the keys of a random tree and their parents: one or two
// tops, each with one to three children, some of which have a child. One
// time in five it returns two or three groups with no parent.
func liveTree(rng *rand.Rand) (keys []string, parents map[string]string) {
	parents = map[string]string{}
	if rng.IntN(5) == 0 {
		return []string{"a", "b", "c"}[:2+rng.IntN(2)], parents
	}
	for r := range 1 + rng.IntN(2) {
		top := fmt.Sprint("t", r)
		keys = append(keys, top)
		for c := range 1 + rng.IntN(3) {
			kid := fmt.Sprintf("%s.u%d", top, c)
			keys, parents[kid] = append(keys, kid), top
			if rng.IntN(2) == 0 {
				keys, parents[kid+".x"] = append(keys, kid+".x"), kid
			}
		}
	}
	return keys, parents
}

// liveRandom returns a random limit: lo to hi, or Unlimited one time in odds.
func liveRandom(rng *rand.Rand, lo, hi, odds int) int {
	if odds > 0 && rng.IntN(odds) == 0 {
		return groupconc.Unlimited
	}
	return lo + rng.IntN(hi-lo+1)
}

// liveChange changes one setting of l at random.
func liveChange(rng *rand.Rand, l *liveLimits, keys []string, mode groupconc.IsolationMode) {
	k := keys[rng.IntN(len(keys))]
	switch rng.IntN(7) {
	case 0, 1:
		l.conc[k] = liveRandom(rng, 1, 4, 6)
	case 2:
		l.inFlight[k] = liveRandom(rng, 1, 5, 2)
	case 3:
		l.global = liveRandom(rng, 1, 6, 4)
	case 4:
		l.queue[k] = liveRandom(rng, 0, 3, 2)
	case 5:
		l.reject = []groupconc.RejectionPolicy{groupconc.RejectAbort, groupconc.RejectDiscard, groupconc.RejectDiscardOldest}[rng.IntN(3)]
	case 6:
		if mode == groupconc.IsolationOff {
			l.globalQueue = liveRandom(rng, 0, 4, 2)
		} else {
			l.weight[k] = 1 + rng.IntN(3)
		}
	}
}

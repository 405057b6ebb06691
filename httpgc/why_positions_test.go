package httpgc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

// whereKeys are the groups of TestRowsSayWhereTheirTasksWait: a tree
// three deep, and a group of its own.
var whereKeys = []string{"a", "a/b", "a/b/c", "a/b/d", "a/e", "x"}

// whereTask is one task of the test, or a caller blocked to submit it.
type whereTask struct {
	key                      string
	release                  chan struct{}
	started, ended, blocking atomic.Bool
	returned                 chan struct{} // closed once SubmitWith returned
	h                        *groupconc.TaskHandle[int]
}

// handle returns the task's handle, or nil while its caller is blocked or
// if it was refused.
func (w *whereTask) handle() *groupconc.TaskHandle[int] {
	select {
	case <-w.returned:
		return w.h
	default:
		return nil
	}
}

// wherePolicy returns a random policy over whereKeys.
func wherePolicy(r *rand.Rand, mode groupconc.IsolationMode, costs bool) *groupconc.GroupPolicy {
	b := groupconc.NewPolicyBuilder().Isolation(mode).ParentSeparator("/")
	if r.IntN(3) > 0 {
		b.GlobalMaxInFlight(1 + r.IntN(5))
	}
	conc, bulk := map[string]int{}, map[string]int{}
	for _, k := range whereKeys {
		if r.IntN(2) == 0 {
			conc[k] = 1 + r.IntN(3)
		}
		if r.IntN(4) == 0 || costs && r.IntN(2) == 0 {
			bulk[k] = 1 + r.IntN(4)
		}
	}
	b.PerGroupMaxConcurrency(conc).PerGroupMaxInFlight(bulk).DefaultMaxConcurrencyPerGroup(1 + r.IntN(4))
	if r.IntN(2) == 0 {
		b.DefaultQueueThresholdPerGroup(r.IntN(3))
	}
	if mode == groupconc.IsolationOff && r.IntN(3) == 0 {
		b.GlobalQueueThreshold(r.IntN(2))
	}
	p, err := b.Build()
	if err != nil {
		panic(err)
	}
	return p
}

// After random steps (submits, blocking ones among them, ends, cancels,
// pauses, overrides, policy changes, evictions, shutdowns), with every
// goroutine still, each row's counts are those of its subtree's tasks,
// and a paused subtree's tasks all wait in a pause line and none started.
// A row with a task waiting or a caller blocked gives a reason. A leaf's
// reason names a limit one of its tasks waits at (Position), or one it
// must pass after the one it waits at (whereNamed). Under fair share
// "global cap" may stand for an ancestor's permits that tasks waiting for
// the cap hold. It names where its first task waits (whereFirst).
func TestRowsSayWhereTheirTasksWait(t *testing.T) { whereRun(t, 40, false) }

// whereRun runs seeds of random steps in each isolation mode. With costs
// the tasks have random costs. It checks the rows after each step.
func whereRun(t *testing.T, seeds uint64, costs bool) {
	for seed := range seeds {
		for _, mode := range modes {
			synctest.Test(t, func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, uint64(mode)))
				e := groupconc.New(wherePolicy(r, mode, costs))
				h, err := httpgc.New(e, httpgc.Options{})
				require.NoError(t, err)
				var tasks []*whereTask
				var log []string
				defer func() {
					for _, k := range whereKeys {
						_ = e.SetGroupOverride(k, groupconc.GroupOverride{})
					}
					for _, w := range tasks {
						close(w.release)
					}
					h.Close()
					require.NoError(t, e.Shutdown(context.Background()))
					for _, w := range tasks {
						<-w.returned
					}
				}()
				for step := range 40 {
					before := map[*whereTask]bool{}
					for _, w := range tasks {
						before[w] = w.started.Load()
					}
					log = append(log, whereStep(t, r, e, mode, costs, &tasks, step))
					synctest.Wait()
					for _, w := range tasks {
						if st, ok := e.GroupStats(w.key); ok && st.Paused && w.started.Load() && !before[w] {
							t.Fatalf("seed %d: a task of %s started while paused; steps:\n  %s", seed, w.key, strings.Join(log, "\n  "))
						}
					}
					if msg := whereCheck(e, h, tasks, mode, costs); msg != "" {
						t.Fatalf("seed %d, %v, step %d: %s\nsteps:\n  %s", seed, mode, step, msg, strings.Join(log, "\n  "))
					}
				}
			})
		}
	}
}

// whereStep takes one random step and says what it did.
func whereStep(t *testing.T, r *rand.Rand, e *groupconc.GroupExecutor, mode groupconc.IsolationMode, costs bool, tasks *[]*whereTask, step int) string {
	key := whereKeys[r.IntN(len(whereKeys))]
	_, known := e.GroupStats(key)
	switch op := r.IntN(13); {
	case op < 5:
		w := &whereTask{key: key, release: make(chan struct{}), returned: make(chan struct{})}
		fn := func(ctx context.Context) (int, error) {
			w.started.Store(true)
			defer w.ended.Store(true)
			select {
			case <-w.release:
			case <-ctx.Done():
			}
			return 0, nil
		}
		o := groupconc.SubmitOptions{Block: r.IntN(3) == 0, MaxWait: time.Duration(r.IntN(3)) * time.Second}
		if costs {
			o.Cost = 1 + r.IntN(3)
		}
		*tasks = append(*tasks, w)
		w.blocking.Store(o.Block)
		submit := func() {
			w.h, _ = groupconc.SubmitWith(context.Background(), e, key, fmt.Sprint(step), fn, o)
			w.blocking.Store(false)
			close(w.returned)
		}
		if o.Block {
			go submit()
		} else {
			submit()
		}
		return fmt.Sprintf("submit to %s, block %v, max wait %v, cost %d", key, o.Block, o.MaxWait, o.Cost)
	case op < 7:
		var running []*whereTask
		for _, w := range *tasks {
			if w.started.Load() && !w.ended.Load() {
				running = append(running, w)
			}
		}
		if len(running) == 0 {
			return "no task to end"
		}
		w := running[r.IntN(len(running))]
		close(w.release)
		w.release = make(chan struct{}) // for the deferred close
		return "end a task of " + w.key
	case op < 8 && known:
		o, _ := e.GroupOverride(key)
		on := r.IntN(2) == 0
		o.Paused = nil
		if on {
			o.Paused = &on
		}
		require.NoError(t, e.SetGroupOverride(key, o))
		return fmt.Sprintf("pause %s: %v", key, on)
	case op < 9 && known:
		o, _ := e.GroupOverride(key)
		n := 1 + r.IntN(3)
		o.MaxConcurrency = &n
		require.NoError(t, e.SetGroupOverride(key, o))
		return fmt.Sprintf("override %s's concurrency: %d", key, n)
	case op < 10:
		require.NoError(t, e.UpdatePolicy(wherePolicy(r, mode, costs)))
		return "update the policy"
	case op < 11:
		var waiting []*whereTask
		for _, w := range *tasks {
			if h := w.handle(); h != nil && !w.started.Load() && !h.IsDone() {
				waiting = append(waiting, w)
			}
		}
		if len(waiting) == 0 {
			return "no task to cancel"
		}
		w := waiting[r.IntN(len(waiting))]
		w.handle().Cancel()
		return "cancel a waiting task of " + w.key
	case op < 12:
		if r.IntN(2) == 0 {
			e.EvictGroup(key)
			return "evict " + key
		}
		e.ShutdownGroup(key)
		return "shut down " + key
	default:
		time.Sleep(time.Second) // fake clock: inside the bubble
		return "sleep a second"
	}
}

// whereCheck returns what is wrong with the rows of e, or "".
func whereCheck(e *groupconc.GroupExecutor, h http.Handler, tasks []*whereTask, mode groupconc.IsolationMode, costs bool) string {
	under := func(key, top string) bool { return key == top || strings.HasPrefix(key, top+"/") }
	var bad []string
	for _, k := range whereKeys {
		st, ok := e.GroupStats(k)
		if !ok {
			continue
		}
		w := get(h, "/api/group?group="+k)
		if w.Code != http.StatusOK {
			continue // forgotten since
		}
		var row struct{ Why string }
		if err := json.Unmarshal(w.Body.Bytes(), &row); err != nil {
			return err.Error()
		}
		var ps []groupconc.WaitPosition
		running, blocked, leaf := 0, 0, true
		for _, t := range tasks {
			if !under(t.key, k) {
				continue
			}
			leaf = leaf && t.key == k
			if t.started.Load() && !t.ended.Load() {
				running++
			}
			if t.blocking.Load() {
				blocked++
			}
			if h := t.handle(); h != nil {
				if p, ok := h.Position(); ok {
					ps = append(ps, p)
				}
			}
		}
		desc := fmt.Sprintf("%s: why %q, %+v, positions %+v", k, row.Why, st, ps)
		switch {
		case len(ps) != st.Waiting || running != st.Running || blocked != st.Blocked:
			bad = append(bad, fmt.Sprintf("%d waiting, %d running, %d blocked: %s", len(ps), running, blocked, desc))
		case st.Paused != (row.Why == "paused"):
			bad = append(bad, "paused, or why paused: "+desc)
		case st.Paused:
			for _, p := range ps {
				if p.Limit != "paused" {
					bad = append(bad, "a paused task not in a pause line: "+desc)
				}
			}
		case st.Waiting+st.Blocked > 0 && row.Why == "":
			bad = append(bad, "waits, but no why: "+desc)
		case st.Waiting+st.Blocked == 0:
			if row.Why != "" && !strings.HasPrefix(row.Why, "running long") {
				bad = append(bad, "nothing waits, but why: "+desc)
			}
		case st.Waiting > 0 && leaf && !costs && !whereNamed(k, row.Why, ps, mode):
			bad = append(bad, "why names no limit its tasks wait for: "+desc)
		case st.Waiting > 0 && leaf && !whereFirst(k, row.Why, ps, mode):
			bad = append(bad, "why names not the limit its tasks wait at first: "+desc)
		}
	}
	return strings.Join(bad, "\n")
}

// whereNamed reports whether why, the reason of leaf k with tasks waiting
// at ps, names a limit one of them waits at, or must pass after it. A
// task takes its bulkheads before its concurrency limits, so one waiting
// at a bulkhead must pass its own concurrency, or an ancestor's, after
// it. One waiting at an ancestor's concurrency limit may hold a nearer
// one's permit, which its siblings wait at.
func whereNamed(k, why string, ps []groupconc.WaitPosition, mode groupconc.IsolationMode) bool {
	ancestor := func(g string) bool { return strings.HasPrefix(k, g+"/") }
	for _, p := range ps {
		switch {
		case why == "global cap":
			if p.Limit == "global" || mode == groupconc.IsolationFairShare && p.Group != k {
				return true
			}
		case why == "own limit: bulkhead":
			if p.Limit == "bulkhead" {
				return true
			}
		case why == "own limit: concurrency":
			if p.Limit == "concurrency" && p.Group == k || p.Limit == "bulkhead" {
				return true
			}
		case strings.HasPrefix(why, "parent limit: "):
			x := strings.TrimPrefix(why, "parent limit: ")
			if ancestor(x) && (p.Group == x || ancestor(p.Group)) {
				return true
			}
		case why == "own limit":
			return true // a wait the counts cannot place
		}
	}
	return false
}

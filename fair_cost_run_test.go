package groupconc_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
)

// runCostModel runs ops (next returns each, nil at the end) against an
// executor whose limit binds at the global cap (where "global") or at the
// top group t ("tenant"), checking each start against the model. It
// returns the first disagreement, "" if none, and the ops it ran.
func runCostModel(t *testing.T, where string, useWeights bool, limit int, next func(v *costModelView) *costOp) (failure string, ran []costOp) {
	mk := func(limit int) *groupconc.GroupPolicy { return modelPolicy(t, where, useWeights, limit) }
	e := groupconc.New(mk(limit))
	defer e.Close()
	var mu sync.Mutex
	var started []int
	v := &costModelView{}
	var log []string
	// Until t has a child, t's line is a plain one: its head is its first
	// task of the highest priority, and a task of higher priority that
	// comes later goes ahead of it.
	kids := where == "global"
	logf := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	logf("limit %d (%s, weights %v)", limit, where, useWeights)
	// predict is the fair choice (shareModel), then the chosen sharer's
	// first task of the highest priority. A raise's top-up counts, since a
	// share is what is held.
	predict := modelPredict(func() []*costTask { return v.all }, where, useWeights, func(tk *costTask) int { return tk.hold })
	free := func() int {
		n := limit
		for _, tk := range v.inState(1) {
			n -= tk.hold
		}
		return n
	}
	take := func(tk *costTask) int { return min(tk.cost, limit) }
	var pin *costTask // the task the fair choice fell on, made with a permit free
	simulate := func() []*costTask {
		var out []*costTask
		if !kids {
			pin = nil
		}
		for {
			if pin == nil {
				if free() < 1 {
					break
				}
				if pin = predict(); pin == nil {
					break
				}
			}
			if take(pin) > free() {
				break
			}
			pin.state, pin.took, pin.hold, pin.whole = 1, take(pin), take(pin), pin.cost > limit
			out = append(out, pin)
			pin = nil
		}
		return out
	}
	seen := 0
	check := func() bool {
		synctest.Wait()
		mu.Lock()
		s := append([]int(nil), started...)
		mu.Unlock()
		got := map[int]bool{}
		for ; seen < len(s); seen++ {
			got[s[seen]] = true
		}
		want := simulate()
		var wantIDs []int
		ok := len(want) == len(got)
		for _, tk := range want {
			wantIDs = append(wantIDs, tk.id)
			ok = ok && got[tk.id]
		}
		if !ok {
			var run, wait []string
			for _, tk := range v.inState(1) {
				run = append(run, fmt.Sprintf("%d:%s/%d/%d", tk.id, tk.key, tk.took, tk.hold))
			}
			for _, tk := range v.inState(0) {
				wait = append(wait, fmt.Sprintf("%d:%s/c%d/p%d", tk.id, tk.key, tk.cost, tk.prio))
			}
			failure = fmt.Sprintf("started %v, model says %v (chosen %v); limit %d; running after model (id:key/took/holds) %v; waiting %v", got, wantIDs, pin != nil, limit, run, wait)
			return false
		}
		for _, id := range wantIDs {
			logf("  started %d (took %d, free now %d)", id, v.all[id].took, free())
		}
		if pin != nil {
			logf("  chosen %d (needs %d, free %d)", pin.id, take(pin), free())
		}
		return true
	}
	defer func() {
		e.Close()
		for _, tk := range v.all {
			select {
			case <-tk.gate:
			default:
				close(tk.gate)
			}
		}
		for _, tk := range v.all {
			<-tk.h.Done()
		}
		if failure != "" {
			failure += "; log:\n" + strings.Join(log, "\n")
		}
	}()
	for {
		op := next(v)
		if op == nil {
			return
		}
		switch op.op {
		case "submit":
			tk := &costTask{modelTask: modelTask{id: len(v.all), key: op.key, prio: op.prio}, cost: op.n, gate: make(chan struct{})}
			v.all = append(v.all, tk)
			h, err := groupconc.SubmitWith(context.Background(), e, op.key, fmt.Sprint(tk.id), func(ctx context.Context) (int, error) {
				mu.Lock()
				started = append(started, tk.id)
				mu.Unlock()
				select {
				case <-tk.gate:
				case <-ctx.Done():
				}
				return 0, nil
			}, groupconc.SubmitOptions{Priority: op.prio, Cost: op.n})
			if err != nil {
				t.Fatal(err)
			}
			tk.h = h
			if op.key != "t" {
				kids = true
			}
			logf("submit %d %s prio %v cost %d", tk.id, op.key, op.prio, op.n)
		case "release":
			if op.n >= len(v.all) || v.all[op.n].state != 1 {
				continue
			}
			v.all[op.n].state = 2
			close(v.all[op.n].gate)
			logf("release %d", op.n)
		case "cancel":
			if op.n >= len(v.all) || v.all[op.n].state != 0 {
				continue
			}
			wt := v.all[op.n]
			wt.h.Cancel()
			wt.state = 2
			if pin == wt {
				pin = nil
			}
			logf("cancel %d", wt.id)
		case "shutdown":
			// Running tasks of the subtree are released one at a time
			// first, so each release is a step the model sees.
			for again := true; again; {
				again = false
				for _, tk := range v.all {
					if modelUnder(tk.key, op.key) && tk.state == 1 {
						tk.state = 2
						close(tk.gate)
						logf("release %d (before shutdownGroup %s)", tk.id, op.key)
						ran = append(ran, costOp{op: "release", n: tk.id})
						if !check() {
							return
						}
						again = true
						break
					}
				}
			}
			for _, tk := range v.all {
				if modelUnder(tk.key, op.key) && tk.state == 0 {
					tk.state = 2
					if pin == tk {
						pin = nil
					}
				}
			}
			e.ShutdownGroup(op.key)
			logf("shutdownGroup %s", op.key)
		case "limit":
			limit = op.n
			// A raised limit tops up a task holding the whole limit, to the
			// new limit or its cost (DESIGN "Cost": it runs alone there).
			for _, tk := range v.inState(1) {
				if tk.whole {
					tk.hold = max(tk.hold, min(tk.cost, limit))
				}
			}
			if err := e.UpdatePolicy(mk(limit)); err != nil {
				t.Fatal(err)
			}
			logf("limit %d", limit)
		}
		ran = append(ran, *op)
		if !check() {
			return
		}
	}
}

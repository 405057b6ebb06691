package groupconc_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
)

// costTask is a task of the cost model.
type costTask struct {
	modelTask
	cost  int
	took  int  // permits it took at the binding limit as it started
	hold  int  // permits it holds there now: a raise tops up a whole take
	whole bool // its cost was above the limit as it started
	gate  chan struct{}
	h     *groupconc.TaskHandle[int]
}

// costOp is a step of the cost model: "submit" (key, prio, cost),
// "release" and "cancel" (id), "shutdown" (key), "limit" (n).
type costOp struct {
	op   string
	key  string
	prio groupconc.Priority
	n    int // cost, id or limit
}

func (o costOp) String() string {
	switch o.op {
	case "submit":
		return fmt.Sprintf("{%q, %q, %d, %d}", o.op, o.key, o.prio, o.n)
	case "shutdown":
		return fmt.Sprintf("{op: %q, key: %q}", o.op, o.key)
	}
	return fmt.Sprintf("{op: %q, n: %d}", o.op, o.n)
}

// costModelView is what an op generator sees of the model.
type costModelView struct {
	all []*costTask
}

func (v *costModelView) inState(state int) []*costTask {
	var r []*costTask
	for _, tk := range v.all {
		if tk.state == state {
			r = append(r, tk)
		}
	}
	return r
}

// TestFairShareWithCostsFollowsItsModel is
// TestFairShareWithParentsFollowsItsModel with tasks of cost 1 to 4 and
// limits 2 to 6. A task takes the lesser of its cost and the limit, and a
// raise tops up one whose cost is above it. Shares are permits held per
// weight, ties to the oldest waiter; the task the fair choice falls on
// (when a permit is free) stays chosen until it starts, and nothing
// overtakes it; no start passes the limit; no permit stays free while the
// chosen task fits. A disagreement is shrunk to the fewest steps that
// still show it.
func TestFairShareWithCostsFollowsItsModel(t *testing.T) {
	const seeds = 150
	for _, where := range []string{"global", "tenant"} {
		keys := modelKeys[where]
		for seed := uint64(1); seed <= seeds; seed++ {
			t.Run(fmt.Sprintf("%s/%d", where, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 29))
				usePrio := seed%2 == 0
				useWeights := seed%3 == 0
				limit := 2 + rng.IntN(5)
				step := 0
				next := func(v *costModelView) *costOp {
					for ; step < 80; step++ {
						switch r := rng.IntN(20); {
						case r < 11:
							pr := groupconc.PriorityNormal
							if usePrio {
								pr = groupconc.Priority(1 + rng.IntN(5))
							}
							k := keys[rng.IntN(len(keys))]
							step++
							return &costOp{op: "submit", key: k, prio: pr, n: 1 + rng.IntN(4)}
						case r < 17:
							if rs := v.inState(1); len(rs) > 0 {
								step++
								return &costOp{op: "release", n: rs[rng.IntN(len(rs))].id}
							}
						case r < 18:
							if ws := v.inState(0); len(ws) > 0 {
								step++
								return &costOp{op: "cancel", n: ws[rng.IntN(len(ws))].id}
							}
						case r < 19:
							step++
							return &costOp{op: "shutdown", key: keys[1+rng.IntN(len(keys)-1)]}
						default:
							step++
							return &costOp{op: "limit", n: 2 + rng.IntN(5)}
						}
					}
					return nil
				}
				var failure string
				var ran []costOp
				synctest.Test(t, func(t *testing.T) {
					failure, ran = runCostModel(t, where, useWeights, limit, next)
				})
				if failure == "" {
					return
				}
				// Shrink: drop ops while the disagreement stays.
				for shrunk := true; shrunk; {
					shrunk = false
					for i := len(ran) - 1; i >= 0; i-- {
						if i >= len(ran) {
							continue
						}
						try := dropOp(ran, i)
						var f string
						synctest.Test(t, func(t *testing.T) {
							f, _ = runCostModel(t, where, useWeights, limit, replay(try))
						})
						if f != "" {
							ran, failure, shrunk = try, f, true
						}
					}
				}
				t.Fatalf("%s\nshrunk ops (limit %d, weights %v): %v", failure, limit, useWeights, ran)
			})
		}
	}
}

// replay returns ops one at a time. Ids of releases and cancels are ids of
// submits in ops.
func replay(ops []costOp) func(*costModelView) *costOp {
	i := 0
	return func(*costModelView) *costOp {
		if i == len(ops) {
			return nil
		}
		i++
		return &ops[i-1]
	}
}

// dropOp returns ops without ops[i]. A submit dropped takes its releases
// and cancels with it, and the ids after it move down.
func dropOp(ops []costOp, i int) []costOp {
	var r []costOp
	if ops[i].op != "submit" {
		r = append(r, ops[:i]...)
		return append(r, ops[i+1:]...)
	}
	id := 0
	for _, o := range ops[:i] {
		if o.op == "submit" {
			id++
		}
	}
	for j, o := range ops {
		if j == i {
			continue
		}
		if o.op == "release" || o.op == "cancel" {
			if o.n == id {
				continue
			}
			if o.n > id {
				o.n--
			}
		}
		r = append(r, o)
	}
	return r
}

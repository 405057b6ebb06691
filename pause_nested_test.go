package groupconc_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// A task waits first at the pause nearest it. a of acme/u1 waits in
// acme's pause line, behind s of acme/u2, when u1 is paused too. It waits
// at u1's pause first, where s never comes. b, submitted after it, comes
// after it there. Position names u1's pause for both. It counts those
// served there before each, in whichever line they stand now. u1 runs
// one task at a time, so a starting first shows it was served first.
func TestPositionCountsTheTasksAheadAtTheNearestPause(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, first := range []string{"acme", "acme/u1"} {
			t.Run("resume "+first+" first", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newExecutor(t, tenants(mode).PerGroupMaxConcurrency(map[string]int{"acme/u1": 1}))
					quiesce(t, e, submit(t, t.Context(), e, "acme/u1", "first", succeed))
					var log startLog
					pause(t, e, "acme", true)
					s := submit(t, t.Context(), e, "acme/u2", "s", log.task("s"))
					a := submit(t, t.Context(), e, "acme/u1", "a", log.task("a"))
					pause(t, e, "acme/u1", true)
					b := submit(t, t.Context(), e, "acme/u1", "b", log.task("b"))
					synctest.Wait()
					at := func(group string, ahead int) groupconc.WaitPosition {
						return groupconc.WaitPosition{Limit: "paused", Group: group, Ahead: ahead}
					}
					assert.Equal(t, at("acme", 0), position(t, s))
					assert.Equal(t, at("acme/u1", 0), position(t, a), "s waits at acme's pause only")
					assert.Equal(t, at("acme/u1", 1), position(t, b), "a was submitted first")

					pause(t, e, first, false)
					synctest.Wait()
					if first == "acme" { // s started, and a moved to u1's line
						assert.Equal(t, at("acme/u1", 0), position(t, a))
						assert.Equal(t, at("acme/u1", 1), position(t, b))
					} else { // b moved to acme's line
						assert.Equal(t, at("acme", 1), position(t, a))
						assert.Equal(t, at("acme", 2), position(t, b))
					}
					pause(t, e, map[string]string{"acme": "acme/u1", "acme/u1": "acme"}[first], false)
					quiesce(t, e, s, a, b)
					assert.Less(t, slices.Index(log.order(), "a"), slices.Index(log.order(), "b"))
				})
			})
		}
	})
}

// a and b wait in u1's pause line while acme is paused too. Resuming u1
// moves them to acme's pause line; c, submitted meanwhile, waits behind
// them. Once acme is resumed and paused again, with a running, b and c
// wait in acme's line, and d behind them. c and d must not pass b when
// acme is resumed: a task taken out of a child's pause line waits behind
// the tasks of an ancestor's line still being drained.
func TestTaskLeavingAChildsPauseLineWaitsBehindItsDrainedParent(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, tenants(mode).PerGroupMaxConcurrency(map[string]int{"acme/u1": 1, "acme/u1/x": 1}))
			quiesce(t, e, submit(t, t.Context(), e, "acme/u1/x", "first", succeed))
			var log startLog
			var hs []*groupconc.TaskHandle[int]
			sub := func(id string) {
				hs = append(hs, submit(t, t.Context(), e, "acme/u1/x", id, log.task(id)))
			}
			pause(t, e, "acme/u1", true)
			pause(t, e, "acme", true)
			sub("a")
			sub("b")
			synctest.Wait()
			pause(t, e, "acme/u1", false)
			sub("c")
			pause(t, e, "acme", false)
			pause(t, e, "acme", true)
			sub("d")
			pause(t, e, "acme", false)
			quiesce(t, e, hs...)
			assert.Equal(t, []string{"a", "b", "c", "d"}, log.order())
		})
	})
}

// Random pauses and resumes of a group, its parent and its grandparent,
// between submissions, keep the group's tasks in the order they were
// submitted (limit 1, so they start one at a time). Each pause and resume
// comes once the walks under way have stopped: a task on its way to its
// limit as a pause comes is the order's one exception (pause.go).
func TestNestedPausesKeepSubmissionOrder(t *testing.T) {
	keys := []string{"acme", "acme/u1", "acme/u1/x"}
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for seed := range 200 {
			rng := rand.New(rand.NewPCG(uint64(seed), 3))
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, tenants(mode).PerGroupMaxConcurrency(map[string]int{"acme/u1": 1, "acme/u1/x": 1}))
				quiesce(t, e, submit(t, t.Context(), e, "acme/u1/x", "first", succeed))
				var log startLog
				var hs []*groupconc.TaskHandle[int]
				var want, ops []string
				paused := map[string]bool{}
				for i := range 30 {
					if rng.IntN(3) == 0 {
						k := keys[rng.IntN(len(keys))]
						paused[k] = !paused[k]
						synctest.Wait()
						pause(t, e, k, paused[k])
						ops = append(ops, fmt.Sprintf("%s=%v", k, paused[k]))
					} else {
						id := fmt.Sprint(i)
						want = append(want, id)
						hs = append(hs, submit(t, t.Context(), e, "acme/u1/x", id, log.task(id)))
						ops = append(ops, id)
					}
					if rng.IntN(2) == 0 {
						synctest.Wait()
					}
				}
				for _, i := range rng.Perm(len(keys)) {
					synctest.Wait()
					pause(t, e, keys[i], false)
				}
				quiesce(t, e, hs...)
				assert.Equal(t, want, log.order(), "seed %d: %v", seed, ops)
			})
			if t.Failed() {
				return
			}
		}
	})
}

package redisgc

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
)

// A replica's demand on the global pool counts each waiting task 1,
// whatever its cost, and each permit in flight 1. Running tasks of cost 2
// took waiting tasks off that demand, one for each permit above one: four
// tasks of cost 2 under a global limit of 12 ran two at a time, with 8
// permits free in the fleet.
func TestTheGlobalDemandCountsEachWaitingTaskOfACostlyGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a replica")
	}
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		t.Run(mode.String(), func(t *testing.T) {
			s := startRedis(t)
			opts := fleetOpts(map[string]int{"other": 12}) // "t" is not coordinated: the global limit alone binds it
			opts.GlobalLimit = 12
			opts.Base = func() *groupconc.PolicyBuilder {
				return groupconc.NewPolicyBuilder().Isolation(mode).DefaultMaxConcurrencyPerGroup(100)
			}
			r := startExecReplica(t, s, "a", opts)
			eventually(t, 10*time.Second, func() bool { return r.coord.Status().Mode == ModeConnected }, "never joined")
			gate := make(chan struct{})
			var hs []*groupconc.TaskHandle[int]
			for range 4 {
				h, err := groupconc.SubmitWith(context.Background(), r.exec, "t", "x", func(context.Context) (int, error) {
					<-gate
					return 0, nil
				}, groupconc.SubmitOptions{Cost: 2})
				if err != nil {
					t.Fatal(err)
				}
				hs = append(hs, h)
			}
			defer func() {
				close(gate)
				for _, h := range hs {
					h.Wait()
				}
			}()
			// In flight 6 and one waiting: a demand of 7, which a third task
			// reaches, and a fourth does not, as a waiting task counts 1.
			eventually(t, 10*time.Second, func() bool { return r.exec.Stats().Running == 3 },
				"never three of the four tasks ran at once")
		})
	}
}

// Under IsolationOff the demand's waiting tasks are read in the pass over
// the groups, before the permits in flight. A task that took its global
// permit in between is counted once: waiting is no more than what waits.
func TestTheGlobalDemandCountsATaskStartedBetweenItsReadsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := groupconc.NewPolicyBuilder().GlobalMaxInFlight(1).Build()
		if err != nil {
			t.Fatal(err)
		}
		e := groupconc.New(p)
		defer e.Close()
		ga, gb := make(chan struct{}), make(chan struct{})
		hold := func(g chan struct{}) groupconc.Task[int] {
			return func(context.Context) (int, error) { <-g; return 0, nil }
		}
		ha, _ := groupconc.Submit(t.Context(), e, "a", "1", hold(ga))
		hb, _ := groupconc.Submit(t.Context(), e, "b", "2", hold(gb))
		synctest.Wait()
		tg := &execTarget{exec: e}
		tg.groups(func(string, load) bool { return true }) // b waits for the global permit
		close(ga)                                          // a ends, and b takes the permit
		ha.Wait()
		synctest.Wait()
		if l := tg.total(); l.demand() != 1 {
			t.Errorf("one task left, a demand of %+v", l)
		}
		close(gb)
		hb.Wait()
	})
}

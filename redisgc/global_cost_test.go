package redisgc

import (
	"context"
	"testing"
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

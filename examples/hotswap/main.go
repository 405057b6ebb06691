// Command hotswap changes an executor's limits while a load runs: it raises
// one tenant's limit, lowers another's, then imposes a global cap and lifts
// it, printing each tenant's running tasks after every change. No task is
// dropped or interrupted: a lowered limit drains as running tasks finish.
// It runs under IsolationFairShare, where only running tasks hold global
// permits; under IsolationOff queued tasks hold them too, so a cap imposed
// on a backlog takes effect as that backlog drains.
//
//	go run ./examples/hotswap
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/kobe/groupconc"
)

var tenants = []string{"acme", "globex", "initech"}

func main() {
	e := groupconc.New(policy(map[string]int{"acme": 2, "globex": 6, "initech": 2}, groupconc.Unlimited))
	defer e.Close()

	// A steady load: every tenant queues 100 tasks of 50ms.
	ctx, stop := context.WithCancel(context.Background())
	var handles []*groupconc.TaskHandle[struct{}]
	for i := range 100 {
		for _, key := range tenants {
			h, err := groupconc.Submit(ctx, e, key, fmt.Sprintf("%s-%d", key, i), work)
			if err != nil {
				log.Fatal(err)
			}
			handles = append(handles, h)
		}
	}

	show(e, "start: acme 2, globex 6, initech 2")
	change(e, "raise acme to 8, lower globex to 1", map[string]int{"acme": 8, "globex": 1, "initech": 2}, groupconc.Unlimited)
	change(e, "impose a global cap of 4", map[string]int{"acme": 8, "globex": 1, "initech": 2}, 4)
	change(e, "lift the global cap", map[string]int{"acme": 8, "globex": 1, "initech": 2}, groupconc.Unlimited)

	stop() // cancel what is still queued: it ends CANCELLED, nothing is lost
	counts := map[groupconc.TaskStatus]int{}
	for _, h := range handles {
		counts[h.Wait().Status]++
	}
	fmt.Printf("\n%d tasks: %d succeeded, %d cancelled while queued, %d failed\n",
		len(handles), counts[groupconc.StatusSuccess], counts[groupconc.StatusCancelled], counts[groupconc.StatusFailed])
}

func policy(limits map[string]int, globalCap int) *groupconc.GroupPolicy {
	p, err := groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		PerGroupMaxConcurrency(limits).
		GlobalMaxInFlight(globalCap).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	return p
}

// change applies new limits live, shows the running counts at once and
// again once running tasks had time to finish.
func change(e *groupconc.GroupExecutor, what string, limits map[string]int, globalCap int) {
	if err := e.UpdatePolicy(policy(limits, globalCap)); err != nil {
		log.Fatal(err)
	}
	show(e, what+" (at once)")
	time.Sleep(120 * time.Millisecond) // let the load run under the new limits
	show(e, what+" (120ms later)")
}

func show(e *groupconc.GroupExecutor, title string) {
	fmt.Printf("%-50s", title)
	for _, key := range tenants {
		gs, _ := e.GroupStats(key)
		fmt.Printf("  %s %d/%d", key, gs.Running, gs.MaxConcurrency)
	}
	s := e.Stats()
	cap := "none"
	if s.GlobalMaxInFlight != groupconc.Unlimited {
		cap = fmt.Sprint(s.GlobalMaxInFlight)
	}
	fmt.Printf("   all %d (cap %s)\n", s.Running, cap)
}

func work(ctx context.Context) (struct{}, error) {
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return struct{}{}, nil
	case <-ctx.Done():
		return struct{}{}, ctx.Err()
	}
}

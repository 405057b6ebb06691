// Command hotswap changes an executor's limits while a load runs. It raises
// one tenant's limit, lowers another's, then imposes a global cap and lifts
// it. It prints each tenant's running tasks after every change. No change
// drops, rejects or interrupts a task. A lowered limit drains as running
// tasks finish. The load is larger than the run, so at the end the program
// cancels the tasks still queued. They end CANCELLED without having run.
// It exits non-zero if a task failed, was rejected, or was cancelled
// before that point.
//
// It runs under IsolationFairShare, where only running tasks hold global
// permits. Under IsolationOff queued tasks hold them too, so a cap imposed
// on a backlog takes effect as that backlog drains.
//
//	go run ./examples/hotswap
package main

import (
	"context"
	"fmt"
	"log"
	"os"
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

	// The demo is over, so cancel the backlog still queued. Those tasks end
	// CANCELLED without having run. The changes above cancelled none.
	stopped := time.Now()
	stop()
	counts := map[groupconc.TaskStatus]int{}
	early := 0
	for _, h := range handles {
		r := h.Wait()
		counts[r.Status]++
		if r.Status == groupconc.StatusCancelled && r.End.Before(stopped) {
			early++
		}
	}
	fmt.Printf("\n%d tasks: %d succeeded while the limits changed; %d still queued at the end, cancelled by the program; %d failed, %d rejected\n",
		len(handles), counts[groupconc.StatusSuccess], counts[groupconc.StatusCancelled],
		counts[groupconc.StatusFailed], counts[groupconc.StatusRejected])
	if early > 0 || counts[groupconc.StatusFailed] > 0 || counts[groupconc.StatusRejected] > 0 {
		fmt.Printf("FAIL: %d tasks cancelled before the end, or tasks failed or rejected\n", early)
		os.Exit(1)
	}
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

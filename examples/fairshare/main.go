// Command fairshare shows what fair-share isolation changes. A heavy tenant
// sends a burst, and a light tenant sends a few tasks just after, under one
// global cap. The same workload runs under IsolationOff and under
// IsolationFairShare, and each task's timeline is drawn in both modes side
// by side, waiting as dots and running as a bar.
//
// Under IsolationOff the light tenant's tasks wait behind the heavy
// tenant's whole burst. Under IsolationFairShare they start as soon as
// running tasks free global permits. A running task is never preempted, so
// a light task may still wait up to one task's run (100ms). The light tenant
// gets its fair half of the cap, so its third task waits one run more.
// The program exits non-zero if a light task waits behind the whole burst
// under fair share, or does not under IsolationOff.
//
//	go run ./examples/fairshare
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kobe/groupconc"
)

const (
	width     = 36 // columns of each timeline
	globalCap = 4
	service   = 100 * time.Millisecond // how long every task works
)

// tenant is one group of the workload.
type tenant struct {
	key   string
	tasks int
	delay time.Duration // when its tasks are submitted, after the start
}

var tenants = []tenant{
	{"heavy", 16, 0},
	{"light", 3, 30 * time.Millisecond},
}

func main() {
	off := run(groupconc.IsolationOff)
	fair := run(groupconc.IsolationFairShare)
	span := max(off.span, fair.span)

	fmt.Printf("global cap %d, each tenant's concurrency %d, every task %v    · waiting  █ running\n\n", globalCap, globalCap, service)
	fmt.Printf("%-10s %-*s   %s\n", "", width+2, "IsolationOff", "IsolationFairShare")
	for i, r := range off.results {
		fmt.Printf("%-10s |%s|   |%s|\n", r.TaskID, row(r, off.t0, span), row(fair.results[i], fair.t0, span))
	}
	fmt.Println()
	for _, mode := range []*outcome{off, fair} {
		fmt.Printf("%-18s light tenant's start delay: worst %v (a task runs %v)\n",
			mode.mode, mode.lightWorst().Round(10*time.Millisecond), service)
	}
	fmt.Println("\nUnder fair share a light task waits for running tasks to end (no preemption),")
	fmt.Println("and the light tenant gets half the cap: its third task waits one run more.")
	fmt.Println("Under IsolationOff it waits for the heavy tenant's whole burst.")
	if !off.lightAfterBurst() || fair.lightAfterBurst() {
		fmt.Println("FAIL: the light tenant's order is not the one described")
		os.Exit(1)
	}
}

// lightAfterBurst reports whether every light task started after every
// heavy task.
func (o *outcome) lightAfterBurst() bool {
	var lastHeavy, firstLight time.Time
	for _, r := range o.results {
		if strings.HasPrefix(r.TaskID, "heavy") && r.Start.After(lastHeavy) {
			lastHeavy = r.Start
		}
		if strings.HasPrefix(r.TaskID, "light") && (firstLight.IsZero() || r.Start.Before(firstLight)) {
			firstLight = r.Start
		}
	}
	return !firstLight.Before(lastHeavy)
}

// outcome is one mode's run.
type outcome struct {
	mode    groupconc.IsolationMode
	t0      time.Time
	span    time.Duration
	results []groupconc.GroupResult[struct{}]
}

// run runs the workload under mode and returns every task's result.
func run(mode groupconc.IsolationMode) *outcome {
	policy, err := groupconc.NewPolicyBuilder().
		Isolation(mode).
		GlobalMaxInFlight(globalCap).
		DefaultMaxConcurrencyPerGroup(globalCap).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()
	ctx := context.Background()
	t0 := time.Now()
	var (
		mu      sync.Mutex
		handles = map[string]*groupconc.TaskHandle[struct{}]{}
		order   []string
		wg      sync.WaitGroup
	)
	for _, tn := range tenants {
		wg.Go(func() {
			time.Sleep(tn.delay) // the tenant's tasks arrive later
			for i := range tn.tasks {
				id := fmt.Sprintf("%s-%d", tn.key, i+1)
				h, err := groupconc.Submit(ctx, e, tn.key, id, work)
				if err != nil {
					log.Fatal(err)
				}
				mu.Lock()
				handles[id] = h
				mu.Unlock()
			}
		})
		for i := range tn.tasks {
			order = append(order, fmt.Sprintf("%s-%d", tn.key, i+1))
		}
	}
	wg.Wait()
	out := &outcome{mode: mode, t0: t0}
	for _, id := range order {
		r := handles[id].Wait()
		out.results = append(out.results, r)
		out.span = max(out.span, r.End.Sub(t0))
	}
	return out
}

func work(ctx context.Context) (struct{}, error) {
	t := time.NewTimer(service)
	defer t.Stop()
	select {
	case <-t.C:
		return struct{}{}, nil
	case <-ctx.Done():
		return struct{}{}, ctx.Err()
	}
}

// row draws one task's wait and run on a timeline of span from t0.
func row(r groupconc.GroupResult[struct{}], t0 time.Time, span time.Duration) string {
	col := func(t time.Time) int { return int(float64(t.Sub(t0))/float64(span)*width + 0.5) }
	cells := []rune(strings.Repeat(" ", width))
	from, start, end := col(r.Submitted), col(r.Start), col(r.End)
	for c := from; c < start && c < width; c++ {
		cells[c] = '·'
	}
	for c := start; c < end && c < width; c++ {
		cells[c] = '█'
	}
	return string(cells)
}

// lightWorst returns the longest time a light task waited to start.
func (o *outcome) lightWorst() time.Duration {
	var worst time.Duration
	for _, r := range o.results {
		if strings.HasPrefix(r.TaskID, "light") {
			worst = max(worst, r.QueueWait())
		}
	}
	return worst
}

// Command backpressure sends the same burst of tasks to four executors that
// differ only in what they do with a task a full queue turns away: the three
// rejection policies and a RejectionHandler. A ListenerFuncs listener counts
// the events of each run.
//
//	go run ./examples/backpressure
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync/atomic"

	"github.com/kobe/groupconc"
)

const (
	burst       = 10 // tasks submitted at once
	concurrency = 2  // of them, this many run
	queue       = 3  // and this many may wait; the rest are rejected
)

// counts is what the listener and the results tell about one run.
type counts struct {
	submitted, started, completed, rejected atomic.Int64

	byStatus  map[groupconc.TaskStatus]int
	awaitErrs int
	values    map[string]int
}

func (c *counts) listener() groupconc.ListenerFuncs {
	return groupconc.ListenerFuncs{
		Submitted: func(_, _ string) { c.submitted.Add(1) },
		Started:   func(_, _ string) { c.started.Add(1) },
		Completed: func(_, _ string, _ groupconc.GroupResult[any]) { c.completed.Add(1) },
		Rejected:  func(_, _, _ string) { c.rejected.Add(1) },
	}
}

// fallback serves reads from a cache and runs writes anyway, without a
// permit: a write must not be lost.
func fallback(ctx context.Context, r *groupconc.Rejection) (any, error) {
	if strings.HasPrefix(r.TaskID, "write-") {
		return r.Run(ctx)
	}
	return "cached", nil
}

func main() {
	runs := []struct {
		name    string
		builder *groupconc.PolicyBuilder
	}{
		{"RejectAbort", groupconc.NewPolicyBuilder().RejectionPolicy(groupconc.RejectAbort)},
		{"RejectDiscard", groupconc.NewPolicyBuilder().RejectionPolicy(groupconc.RejectDiscard)},
		{"RejectCallerRuns", groupconc.NewPolicyBuilder().RejectionPolicy(groupconc.RejectCallerRuns)},
		{"RejectionHandler", groupconc.NewPolicyBuilder().RejectionHandler(fallback)},
	}

	fmt.Printf("a burst of %d tasks into a group with concurrency %d and queue threshold %d\n\n", burst, concurrency, queue)
	fmt.Printf("%-16s | %-36s | %s\n", "", "listener calls", "results")
	fmt.Printf("%-16s | %9s %7s %9s %8s | %7s %8s %9s %5s %6s\n", "",
		"Submitted", "Started", "Completed", "Rejected",
		"SUCCESS", "REJECTED", "Await err", "done", "cached")
	for _, run := range runs {
		c, err := burstInto(run.builder)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-16s | %9d %7d %9d %8d | %7d %8d %9d %5d %6d\n", run.name,
			c.submitted.Load(), c.started.Load(), c.completed.Load(), c.rejected.Load(),
			c.byStatus[groupconc.StatusSuccess], c.byStatus[groupconc.StatusRejected], c.awaitErrs,
			c.values["done"], c.values["cached"])
	}
	fmt.Print(`
Await err: Await calls that returned an error (a *RejectedError)
done, cached: SUCCESS values the task computed, and values the handler served

RejectAbort       rejected tasks fail fast, and Await says so
RejectDiscard     rejected tasks are dropped quietly
RejectCallerRuns  rejected tasks run anyway, outside every limit
RejectionHandler  reads get a cached value, writes run anyway
`)
}

// burstInto submits the burst to a new executor with b's rejection settings
// and returns what happened.
func burstInto(b *groupconc.PolicyBuilder) (*counts, error) {
	c := &counts{byStatus: map[groupconc.TaskStatus]int{}, values: map[string]int{}}
	policy, err := b.
		DefaultMaxConcurrencyPerGroup(concurrency).
		DefaultQueueThresholdPerGroup(queue).
		TaskLifecycleListener(c.listener()).
		Build()
	if err != nil {
		return nil, err
	}
	e := groupconc.New(policy)
	defer e.Close()

	// Every task waits for the gate, so the whole burst is in the executor
	// before the first task ends: the same tasks are rejected on every run.
	gate := make(chan struct{})
	task := func(ctx context.Context) (string, error) {
		select {
		case <-gate:
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	ctx := context.Background()
	handles := make([]*groupconc.TaskHandle[string], 0, burst)
	for i := 1; i <= burst; i++ {
		id := fmt.Sprintf("read-%d", i)
		if i%2 == 0 {
			id = fmt.Sprintf("write-%d", i)
		}
		h, err := groupconc.Submit(ctx, e, "ingest", id, task)
		if err != nil {
			return nil, err
		}
		handles = append(handles, h)
	}
	close(gate)

	for _, h := range handles {
		r, err := h.Await(ctx)
		c.byStatus[r.Status]++
		if err != nil {
			c.awaitErrs++
			if !errors.Is(err, groupconc.ErrRejected) {
				return nil, fmt.Errorf("unexpected Await error: %w", err)
			}
		}
		if r.Status == groupconc.StatusSuccess {
			c.values[r.Value]++
		}
	}
	// Once Shutdown returns, every listener call has been made.
	return c, e.Shutdown(ctx)
}

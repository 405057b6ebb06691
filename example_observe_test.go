package groupconc_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kobe/groupconc"
)

func ExampleListenerFuncs() {
	var (
		mu     sync.Mutex
		events = map[string][]string{} // task ID → its events, in order
	)
	record := func(taskID, event string) {
		mu.Lock()
		defer mu.Unlock()
		events[taskID] = append(events[taskID], event)
	}
	listener := groupconc.ListenerFuncs{
		Submitted: func(_, id string) { record(id, "submitted") },
		Started:   func(_, id string) { record(id, "started") },
		Completed: func(_, id string, r groupconc.GroupResult[any]) { record(id, "completed "+r.Status.String()) },
		Rejected:  func(_, id, reason string) { record(id, "rejected ("+reason+")") },
		// Any field may be left nil.
	}
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		DefaultQueueThresholdPerGroup(0). // no waiting: a busy group rejects
		TaskLifecycleListener(listener)))

	ctx := context.Background()
	gate := make(chan struct{})
	first, _ := groupconc.Submit(ctx, e, "g", "first", exBlockUntil(gate, "ok"))
	second, _ := groupconc.Submit(ctx, e, "g", "second", exBlockUntil(gate, "ok"))
	close(gate)
	first.Wait()
	second.Wait()

	// Listener methods run on the tasks' goroutines; once Shutdown has
	// returned, every one of them has been called.
	if err := e.Shutdown(ctx); err != nil {
		fmt.Println("shutdown:", err)
	}
	ids := make([]string, 0, len(events))
	for id := range events {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Println(id+":", strings.Join(events[id], ", "))
	}
	// Output:
	// first: submitted, started, completed SUCCESS
	// second: submitted, rejected (group_queue_full)
}

func ExampleGroupExecutor_Stats() {
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"a": 2})))
	ctx := context.Background()

	// Three tasks for a group of concurrency 2: two run, one waits.
	gate := make(chan struct{})
	for _, id := range []string{"a1", "a2", "a3"} {
		if _, err := groupconc.Submit(ctx, e, "a", id, exBlockUntil(gate, id)); err != nil {
			fmt.Println("submit:", err)
			return
		}
	}
	s := e.Stats()
	fmt.Printf("groups=%d running=%d waiting=%d in-flight=%d\n", s.Groups, s.Running, s.Waiting, s.GlobalInFlight)
	fmt.Printf("submitted=%d succeeded=%d\n", s.Submitted, s.Succeeded)

	close(gate)
	if err := e.Shutdown(ctx); err != nil {
		fmt.Println("shutdown:", err)
	}
	s = e.Stats()
	fmt.Printf("groups=%d running=%d waiting=%d in-flight=%d\n", s.Groups, s.Running, s.Waiting, s.GlobalInFlight)
	fmt.Printf("submitted=%d succeeded=%d\n", s.Submitted, s.Succeeded)
	// Output:
	// groups=1 running=2 waiting=1 in-flight=3
	// submitted=3 succeeded=0
	// groups=1 running=0 waiting=0 in-flight=0
	// submitted=3 succeeded=3
}

func ExampleGroupExecutor_GroupStats() {
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(1).
		DefaultMaxInFlightPerGroup(2).
		DefaultQueueThresholdPerGroup(5)))
	defer e.Close()
	ctx := context.Background()

	// Concurrency 1 and a bulkhead of 2: one task runs, one waits past the
	// bulkhead for the concurrency permit, one waits at the bulkhead.
	gate := make(chan struct{})
	var handles []*groupconc.TaskHandle[string]
	for _, id := range []string{"t1", "t2", "t3"} {
		h, err := groupconc.Submit(ctx, e, "tenant", id, exBlockUntil(gate, id))
		if err != nil {
			fmt.Println("submit:", err)
			return
		}
		handles = append(handles, h)
	}
	g, ok := e.GroupStats("tenant")
	fmt.Println("known:", ok)
	fmt.Printf("running=%d waiting=%d in-flight=%d\n", g.Running, g.Waiting, g.InFlight)
	fmt.Printf("limits: concurrency=%d in-flight=%d queue=%d\n", g.MaxConcurrency, g.MaxInFlight, g.QueueThreshold)

	close(gate)
	for _, h := range handles {
		fmt.Println(h.TaskID(), h.Wait().Status)
	}
	_, ok = e.GroupStats("never-used")
	fmt.Println("never-used known:", ok)
	// Output:
	// known: true
	// running=1 waiting=2 in-flight=2
	// limits: concurrency=1 in-flight=2 queue=5
	// t1 SUCCESS
	// t2 SUCCESS
	// t3 SUCCESS
	// never-used known: false
}

func ExampleGroupExecutor_ActiveGroupStats() {
	e := groupconc.New(nil)
	defer e.Close()
	ctx := context.Background()
	// A thousand groups that ran a task each, and are idle now.
	for i := range 1000 {
		h, _ := groupconc.Submit(ctx, e, fmt.Sprint("idle-", i), "t", exBlockUntil(closed(), ""))
		h.Wait()
	}
	gate := make(chan struct{})
	defer close(gate)
	for _, g := range []string{"a", "b", "b"} {
		_, _ = groupconc.Submit(ctx, e, g, "t", exBlockUntil(gate, ""))
	}
	var lines []string
	for gs := range e.ActiveGroupStats() { // in no particular order
		lines = append(lines, fmt.Sprintf("%s running %d waiting %d", gs.GroupKey, gs.Running, gs.Waiting))
	}
	slices.Sort(lines)
	fmt.Println(e.Stats().Groups, "groups remembered, of which active:")
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// 1002 groups remembered, of which active:
	// a running 1 waiting 0
	// b running 1 waiting 1
}

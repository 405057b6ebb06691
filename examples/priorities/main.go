// Command priorities shows how SubmitOptions.Priority orders the tasks that
// wait in one group, and how RejectDiscardOldest sheds by priority.
//
// First, one group runs one task at a time. While a first task holds the
// slot, 9 tasks are queued at three priorities, mixed. They start highest
// first, and in submission order within one priority. A running task is
// never preempted: priority only picks who goes next.
//
// Then the group's queue holds at most 4 tasks, under RejectDiscardOldest.
// 4 low tasks fill it; 2 urgent tasks arrive. Each takes the place of the
// oldest low task, which ends REJECTED with ReasonDisplaced.
//
// The program exits non-zero if either order differs from this.
//
//	go run ./examples/priorities
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"

	"github.com/kobe/groupconc"
)

func main() {
	ok := order()
	if !shed() {
		ok = false
	}
	if !ok {
		os.Exit(1)
	}
}

// order queues tasks of three priorities behind a running one and checks
// the order they start in.
func order() bool {
	var (
		mu      sync.Mutex
		started []string
	)
	policy, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(1).
		TaskLifecycleListener(groupconc.ListenerFuncs{
			Started: func(_, taskID string) {
				mu.Lock()
				started = append(started, taskID)
				mu.Unlock()
			},
		}).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()
	ctx := context.Background()

	gate := make(chan struct{})
	first, err := groupconc.Submit(ctx, e, "reports", "first", func(context.Context) (struct{}, error) {
		<-gate // holds the group's one slot until the queue is full
		return struct{}{}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	queued := []struct {
		id string
		p  groupconc.Priority
	}{
		{"low-1", groupconc.PriorityLow}, {"normal-1", groupconc.PriorityNormal}, {"urgent-1", groupconc.PriorityHighest},
		{"low-2", groupconc.PriorityLow}, {"normal-2", groupconc.PriorityNormal}, {"urgent-2", groupconc.PriorityHighest},
		{"low-3", groupconc.PriorityLow}, {"normal-3", groupconc.PriorityNormal}, {"urgent-3", groupconc.PriorityHighest},
	}
	var handles []*groupconc.TaskHandle[struct{}]
	for _, q := range queued {
		h, err := groupconc.SubmitWith(ctx, e, "reports", q.id, func(context.Context) (struct{}, error) {
			return struct{}{}, nil
		}, groupconc.SubmitOptions{Priority: q.p})
		if err != nil {
			log.Fatal(err)
		}
		handles = append(handles, h)
	}
	close(gate)
	first.Wait()
	for _, h := range handles {
		h.Wait()
	}

	want := []string{"first", "urgent-1", "urgent-2", "urgent-3", "normal-1", "normal-2", "normal-3", "low-1", "low-2", "low-3"}
	mu.Lock()
	defer mu.Unlock()
	var submitted []string
	for _, q := range queued {
		submitted = append(submitted, q.id)
	}
	fmt.Println("submitted:", submitted)
	fmt.Println("started:  ", started)
	if !slices.Equal(started, want) {
		fmt.Println("FAIL: want", want)
		return false
	}
	return true
}

// shed fills a queue with low tasks, then submits urgent ones under
// RejectDiscardOldest and checks which tasks were displaced.
func shed() bool {
	policy, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(1).
		DefaultQueueThresholdPerGroup(4).
		RejectionPolicy(groupconc.RejectDiscardOldest).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()
	ctx := context.Background()

	gate := make(chan struct{})
	hold := func(context.Context) (string, error) { <-gate; return "ran", nil }
	quick := func(context.Context) (string, error) { return "ran", nil }
	handles := []*groupconc.TaskHandle[string]{}
	submit := func(id string, p groupconc.Priority, task groupconc.Task[string]) {
		h, err := groupconc.SubmitWith(ctx, e, "reports", id, task, groupconc.SubmitOptions{Priority: p})
		if err != nil {
			log.Fatal(err)
		}
		handles = append(handles, h)
	}
	submit("running", groupconc.PriorityNormal, hold)
	for i := 1; i <= 4; i++ {
		submit(fmt.Sprintf("low-%d", i), groupconc.PriorityLow, quick)
	}
	submit("urgent-1", groupconc.PriorityHighest, quick)
	submit("urgent-2", groupconc.PriorityHighest, quick)
	close(gate)

	fmt.Println("\nqueue of 4 under RejectDiscardOldest:")
	var displaced []string
	for _, h := range handles {
		r := h.Wait()
		var re *groupconc.RejectedError
		if errors.As(r.Err, &re) {
			fmt.Printf("  %-8s %s (%s)\n", r.TaskID, r.Status, re.Reason)
			if re.Reason == groupconc.ReasonDisplaced {
				displaced = append(displaced, r.TaskID)
			}
			continue
		}
		fmt.Printf("  %-8s %s\n", r.TaskID, r.Status)
	}
	if want := []string{"low-1", "low-2"}; !slices.Equal(displaced, want) {
		fmt.Println("FAIL: displaced", displaced, "want", want)
		return false
	}
	return true
}

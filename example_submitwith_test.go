package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kobe/groupconc"
)

// exJob is a message a consumer reads from a queue or a stream.
type exJob struct {
	tenant string
	n      int
}

func ExampleSubmitWith() {
	// Each tenant runs 2 tasks at once and holds at most 4 waiting. A
	// consumer that reads faster than the tasks run waits for room
	// (Block) instead of losing a message or piling them up in memory.
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(2).
		DefaultQueueThresholdPerGroup(4)))
	defer e.Close()

	jobs := make(chan exJob)
	go func() { // the source: a broker, a file, a socket
		defer close(jobs)
		for i := range 30 {
			jobs <- exJob{tenant: []string{"acme", "globex", "initech"}[i%3], n: i}
		}
	}()

	ctx := context.Background()
	var handles []*groupconc.TaskHandle[int]
	mostWaiting := 0
	for j := range jobs {
		h, err := groupconc.SubmitWith(ctx, e, j.tenant, fmt.Sprint("job-", j.n),
			func(ctx context.Context) (int, error) {
				time.Sleep(time.Millisecond) // the work
				return j.n, nil
			},
			groupconc.SubmitOptions{Block: true})
		if err != nil { // ctx ended or the executor closed: j was not taken
			fmt.Println("stopped:", err)
			return
		}
		handles = append(handles, h)
		gs, _ := e.GroupStats(j.tenant)
		mostWaiting = max(mostWaiting, gs.Waiting)
	}

	sums := map[string]int{}
	for _, h := range handles {
		r := h.Wait()
		sums[r.GroupKey] += r.Value
	}
	fmt.Println("acme", sums["acme"], "globex", sums["globex"], "initech", sums["initech"])
	fmt.Println("rejected:", e.Stats().Rejected)
	fmt.Println("never more than 4 waiting per tenant:", mostWaiting <= 4)
	// Output:
	// acme 135 globex 145 initech 155
	// rejected: 0
	// never more than 4 waiting per tenant: true
}

func ExampleSubmitOptions_maxWait() {
	// One task at a time and none waiting: the group is full while "busy"
	// runs. RejectCallerRuns runs a task whose wait ran past MaxWait.
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(1).
		DefaultQueueThresholdPerGroup(0).
		RejectionPolicy(groupconc.RejectCallerRuns)))
	defer e.Close()

	gate := make(chan struct{})
	busy, _ := groupconc.Submit(context.Background(), e, "mail", "busy", exBlockUntil(gate, "done"))

	// The caller's ctx ends first: nothing was submitted.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	h, err := groupconc.SubmitWith(ctx, e, "mail", "a", exBlockUntil(gate, "a"),
		groupconc.SubmitOptions{Block: true})
	fmt.Println(h == nil, errors.Is(err, context.DeadlineExceeded))

	// MaxWait passes first: the task is accepted and turned away with
	// ReasonWaitTimeout, and RejectCallerRuns runs it anyway.
	h, err = groupconc.SubmitWith(context.Background(), e, "mail", "b",
		func(context.Context) (string, error) { return "sent by the caller", nil },
		groupconc.SubmitOptions{Block: true, MaxWait: 10 * time.Millisecond})
	fmt.Println(err)
	r := h.Wait()
	fmt.Println(r.Status, r.Value)

	close(gate)
	fmt.Println("busy:", busy.Wait().Status)
	// Output:
	// true true
	// <nil>
	// SUCCESS sent by the caller
	// busy: SUCCESS
}

func ExamplePriority() {
	// One task at a time: while "busy" runs, the others wait, and they
	// start by priority, then in the order they were submitted.
	e := groupconc.New(nil)
	defer e.Close()
	ctx := context.Background()

	gate := make(chan struct{})
	busy, _ := groupconc.Submit(ctx, e, "reports", "busy", exBlockUntil(gate, "done"))
	var handles []*groupconc.TaskHandle[string]
	started := make(chan string, 5) // one task at a time: in start order
	for _, t := range []struct {
		id   string
		prio groupconc.Priority
	}{
		{"nightly-export", groupconc.PriorityLow},
		{"dashboard", 0}, // the default: PriorityNormal
		{"invoice", groupconc.PriorityHighest},
		{"thumbnail", groupconc.PriorityLow},
		{"alert", groupconc.PriorityHighest},
	} {
		h, err := groupconc.SubmitWith(ctx, e, "reports", t.id,
			func(context.Context) (string, error) { started <- t.id; return t.id, nil },
			groupconc.SubmitOptions{Priority: t.prio})
		if err != nil {
			fmt.Println("submit:", err)
			return
		}
		handles = append(handles, h)
	}
	close(gate)
	for _, h := range handles {
		h.Wait()
	}
	busy.Wait()
	close(started)
	for id := range started {
		fmt.Println(id)
	}
	// Output:
	// invoice
	// alert
	// dashboard
	// nightly-export
	// thumbnail
}

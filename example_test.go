package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kobe/groupconc"
)

// exMustBuild returns the policy b builds, and panics on a bad setting.
func exMustBuild(b *groupconc.PolicyBuilder) *groupconc.GroupPolicy {
	p, err := b.Build()
	if err != nil {
		panic(err)
	}
	return p
}

// exBlockUntil returns a task that waits until gate is closed, then returns
// value. A task that must stay busy while an example looks at the executor
// waits on a channel like this one, never on a timer.
func exBlockUntil(gate <-chan struct{}, value string) groupconc.Task[string] {
	return func(ctx context.Context) (string, error) {
		select {
		case <-gate:
			return value, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// exRejectingPolicy returns a policy under which a group runs one task at a
// time and no task may wait: while a task runs, the next one submitted to the
// same group is rejected inside Submit.
func exRejectingPolicy(p groupconc.RejectionPolicy) *groupconc.GroupPolicy {
	return exMustBuild(groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(1).
		DefaultQueueThresholdPerGroup(0).
		RejectionPolicy(p))
}

func ExampleNew() {
	// A nil policy is DefaultPolicy: one task at a time per group, no caps,
	// no queue thresholds.
	e := groupconc.New(nil)
	defer e.Close()

	h, err := groupconc.Submit(context.Background(), e, "tenant-a", "greet",
		func(ctx context.Context) (string, error) {
			return "hello from tenant-a", nil
		})
	if err != nil {
		fmt.Println("submit:", err)
		return
	}
	r := h.Wait()
	fmt.Println(r.Status, r.Value)
	// Output:
	// SUCCESS hello from tenant-a
}

func ExampleSubmit() {
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(2)))
	defer e.Close()

	ctx := context.Background()
	var handles []*groupconc.TaskHandle[int]
	for _, tenant := range []string{"acme", "globex"} {
		for i := 1; i <= 3; i++ {
			h, err := groupconc.Submit(ctx, e, tenant, fmt.Sprintf("%s-%d", tenant, i),
				func(ctx context.Context) (int, error) {
					return i * i, nil
				})
			if err != nil {
				fmt.Println("submit:", err)
				return
			}
			handles = append(handles, h)
		}
	}
	// Submit returned at once; the tasks run on their own goroutines.
	// Waiting on the handles in order prints the results in that order.
	for _, h := range handles {
		r := h.Wait()
		fmt.Println(r.GroupKey, r.TaskID, r.Status, r.Value)
	}

	// Submit checks the task itself; it never blocks on permits.
	_, err := groupconc.Submit(ctx, e, "", "no-group", func(context.Context) (int, error) { return 0, nil })
	fmt.Println(errors.Is(err, groupconc.ErrInvalidTask), err)
	// Output:
	// acme acme-1 SUCCESS 1
	// acme acme-2 SUCCESS 4
	// acme acme-3 SUCCESS 9
	// globex globex-1 SUCCESS 1
	// globex globex-2 SUCCESS 4
	// globex globex-3 SUCCESS 9
	// true groupconc: invalid task: GroupKey is empty
}

func ExampleExecuteAll() {
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"search": 4})))
	defer e.Close()

	errNotFound := errors.New("not found")
	lookup := func(id string) groupconc.Task[string] {
		return func(ctx context.Context) (string, error) {
			if id == "u3" {
				return "", errNotFound
			}
			return "user " + id, nil
		}
	}
	var tasks []groupconc.GroupTask[string]
	for _, id := range []string{"u1", "u2", "u3", "u4"} {
		tasks = append(tasks, groupconc.GroupTask[string]{GroupKey: "search", TaskID: id, Task: lookup(id)})
	}
	tasks = append(tasks, groupconc.GroupTask[string]{GroupKey: "billing", TaskID: "invoice", Task: lookup("b1")})

	// Every task runs, even after one fails; results come back in input
	// order, and a task's own error is in its result, not in err.
	results, err := groupconc.ExecuteAll(context.Background(), e, tasks)
	fmt.Println("err:", err)
	for _, r := range results {
		switch r.Status {
		case groupconc.StatusSuccess:
			fmt.Printf("%s/%s %s %q\n", r.GroupKey, r.TaskID, r.Status, r.Value)
		default:
			fmt.Printf("%s/%s %s %v (is errNotFound: %t)\n", r.GroupKey, r.TaskID, r.Status, r.Err, errors.Is(r.Err, errNotFound))
		}
	}
	// Output:
	// err: <nil>
	// search/u1 SUCCESS "user u1"
	// search/u2 SUCCESS "user u2"
	// search/u3 FAILED not found (is errNotFound: true)
	// search/u4 SUCCESS "user u4"
	// billing/invoice SUCCESS "user b1"
}

func ExampleNewPolicyBuilder() {
	policy, err := groupconc.NewPolicyBuilder().
		// Concurrency resolves map → resolver → default.
		PerGroupMaxConcurrency(map[string]int{"premium": 8}).
		ConcurrencyResolver(func(groupKey string) int {
			if strings.HasPrefix(groupKey, "batch-") {
				return 2
			}
			return 4
		}).
		// At most 100 tasks in flight over all groups, 10 per group, and at
		// most 20 of a group's tasks waiting; beyond that, reject.
		GlobalMaxInFlight(100).
		DefaultMaxInFlightPerGroup(10).
		DefaultQueueThresholdPerGroup(20).
		RejectionPolicy(groupconc.RejectAbort).
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range []string{"premium", "batch-nightly", "free"} {
		fmt.Printf("%-13s concurrency=%d in-flight=%d queue=%d\n", g,
			policy.ResolveConcurrency(g), policy.ResolveMaxInFlight(g), policy.ResolveQueueThreshold(g))
	}
	fmt.Println("global in-flight:", policy.GlobalMaxInFlight())
	fmt.Println("global queue unlimited:", policy.GlobalQueueThreshold() == groupconc.Unlimited)

	// Build reports every bad setting at once.
	_, err = groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(0).
		DefaultQueueThresholdPerGroup(-1).
		Build()
	fmt.Println(errors.Is(err, groupconc.ErrInvalidPolicy))
	fmt.Println(err)
	// Output:
	// premium       concurrency=8 in-flight=10 queue=20
	// batch-nightly concurrency=2 in-flight=10 queue=20
	// free          concurrency=4 in-flight=10 queue=20
	// global in-flight: 100
	// global queue unlimited: true
	// true
	// groupconc: invalid policy: DefaultMaxConcurrencyPerGroup is 0, want >= 1; DefaultQueueThresholdPerGroup is -1, want >= 0
}

func ExampleTaskHandle_Await() {
	e := groupconc.New(nil)
	defer e.Close()

	gate := make(chan struct{})
	h, err := groupconc.Submit(context.Background(), e, "reports", "q3", exBlockUntil(gate, "report ready"))
	if err != nil {
		fmt.Println("submit:", err)
		return
	}

	// The task is held on gate, so this Await's deadline ends first: it
	// returns a CANCELLED result and the context's error, and the task
	// goes on.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	r, err := h.Await(ctx)
	cancel()
	fmt.Println(r.Status, err, h.IsDone())

	close(gate)
	r, err = h.Await(context.Background())
	fmt.Println(r.Status, r.Value, err)
	// Output:
	// CANCELLED context deadline exceeded false
	// SUCCESS report ready <nil>
}

func ExampleTaskHandle_Cancel() {
	e := groupconc.New(nil) // one task at a time per group
	ctx := context.Background()

	running, err := groupconc.Submit(ctx, e, "export", "running",
		func(ctx context.Context) (string, error) {
			<-ctx.Done() // works until cancelled
			return "", context.Cause(ctx)
		})
	if err != nil {
		fmt.Println("submit:", err)
		return
	}
	waiting, err := groupconc.Submit(ctx, e, "export", "waiting", exBlockUntil(nil, "never"))
	if err != nil {
		fmt.Println("submit:", err)
		return
	}

	// Cancel completes the handle at once, whether the task waits or runs.
	for _, h := range []*groupconc.TaskHandle[string]{waiting, running} {
		fmt.Println(h.TaskID(), "cancelled:", h.Cancel())
		r := h.Wait()
		fmt.Println(h.TaskID(), r.Status, r.Err)
	}
	fmt.Println("second cancel:", running.Cancel())

	// Shutdown waits until the cancelled function has returned.
	if err := e.Shutdown(ctx); err != nil {
		fmt.Println("shutdown:", err)
	}
	// Output:
	// waiting cancelled: true
	// waiting CANCELLED context canceled
	// running cancelled: true
	// running CANCELLED context canceled
	// second cancel: false
}

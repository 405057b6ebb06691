package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kobe/groupconc"
)

// Examples of the executor's entry points not shown elsewhere.

func ExampleExecuteAllWith() {
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(1).
		DefaultQueueThresholdPerGroup(1)))
	defer e.Close()
	var tasks []groupconc.GroupTask[int]
	for i := range 4 {
		tasks = append(tasks, groupconc.GroupTask[int]{GroupKey: "g", TaskID: fmt.Sprint(i),
			Task: func(context.Context) (int, error) { return i * i, nil }})
	}
	// Block: each submission waits for a queue slot instead of being
	// rejected, so every task runs although only one may wait.
	results, err := groupconc.ExecuteAllWith(context.Background(), e, tasks,
		groupconc.SubmitOptions{Block: true})
	for _, r := range results {
		fmt.Print(r.Value, " ", r.Status, "; ")
	}
	fmt.Println(err)
	// Output: 0 SUCCESS; 1 SUCCESS; 4 SUCCESS; 9 SUCCESS; <nil>
}

func ExampleListeners() {
	count := 0
	logger := groupconc.ListenerFuncs{Submitted: func(g, id string) { fmt.Println("submitted", id) }}
	counter := groupconc.ListenerFuncs{Completed: func(string, string, groupconc.GroupResult[any]) { count++ }}
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		TaskLifecycleListener(groupconc.Listeners(logger, counter))))
	h, _ := groupconc.Submit(context.Background(), e, "g", "t1", exBlockUntil(closed(), ""))
	h.Wait()
	_ = e.Shutdown(context.Background())
	fmt.Println("completed", count)
	// Output:
	// submitted t1
	// completed 1
}

func ExampleGroupExecutor_AllGroupStats() {
	e := groupconc.New(nil)
	defer e.Close()
	gate := make(chan struct{})
	defer close(gate)
	for _, g := range []string{"a", "b", "b"} {
		_, _ = groupconc.Submit(context.Background(), e, g, "t", exBlockUntil(gate, ""))
	}
	var lines []string
	for gs := range e.AllGroupStats() { // in no particular order
		lines = append(lines, fmt.Sprintf("%s running %d waiting %d", gs.GroupKey, gs.Running, gs.Waiting))
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// a running 1 waiting 0
	// b running 1 waiting 1
}

func ExampleGroupExecutor_UpdatePolicy() {
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1)))
	defer e.Close()
	gate := make(chan struct{})
	defer close(gate)
	for i := range 3 {
		_, _ = groupconc.Submit(context.Background(), e, "g", fmt.Sprint(i), exBlockUntil(gate, ""))
	}
	gs, _ := e.GroupStats("g")
	fmt.Println("before:", gs.Running, "running,", gs.Waiting, "waiting")

	// A raised limit starts the waiting tasks that now fit, at once.
	if err := e.UpdatePolicy(exMustBuild(groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(3))); err != nil {
		panic(err)
	}
	gs, _ = e.GroupStats("g")
	fmt.Println("after:", gs.Running, "running, limit", gs.MaxConcurrency)
	// Output:
	// before: 1 running, 2 waiting
	// after: 3 running, limit 3
}

func ExampleGroupExecutor_Policy() {
	p := exMustBuild(groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4))
	e := groupconc.New(p)
	defer e.Close()
	fmt.Println(e.Policy() == p, e.Policy().ResolveConcurrency("x"))
	// Output: true 4
}

func ExampleGroupExecutor_SetGroupOverride() {
	e := groupconc.New(nil)
	defer e.Close()
	n := 5
	err := e.SetGroupOverride("acme", groupconc.GroupOverride{MaxConcurrency: &n})
	fmt.Println(errors.Is(err, groupconc.ErrUnknownGroup)) // only a known group takes one

	h, _ := groupconc.Submit(context.Background(), e, "acme", "t", exBlockUntil(closed(), ""))
	h.Wait()
	if err := e.SetGroupOverride("acme", groupconc.GroupOverride{MaxConcurrency: &n}); err != nil {
		panic(err)
	}
	gs, _ := e.GroupStats("acme")
	fmt.Println(gs.MaxConcurrency)

	_ = e.SetGroupOverride("acme", groupconc.GroupOverride{}) // removes it
	gs, _ = e.GroupStats("acme")
	fmt.Println(gs.MaxConcurrency)
	// Output:
	// true
	// 5
	// 1
}

func ExampleGroupExecutor_GroupOverride() {
	e := groupconc.New(nil)
	defer e.Close()
	h, _ := groupconc.Submit(context.Background(), e, "acme", "t", exBlockUntil(closed(), ""))
	h.Wait()
	n := 3
	_ = e.SetGroupOverride("acme", groupconc.GroupOverride{QueueThreshold: &n})
	o, ok := e.GroupOverride("acme")
	fmt.Println(ok, *o.QueueThreshold, o.MaxConcurrency == nil)
	// Output: true 3 true
}

func ExampleGroupExecutor_GroupOverrides() {
	e := groupconc.New(nil)
	defer e.Close()
	for _, g := range []string{"a", "b"} {
		h, _ := groupconc.Submit(context.Background(), e, g, "t", exBlockUntil(closed(), ""))
		h.Wait()
		n := len(g) + 1
		_ = e.SetGroupOverride(g, groupconc.GroupOverride{MaxConcurrency: &n})
	}
	var keys []string
	for key := range e.GroupOverrides() { // to save them: overrides live in memory only
		keys = append(keys, key)
	}
	slices.Sort(keys)
	fmt.Println(keys)
	// Output: [a b]
}

func ExampleGroupExecutor_GuardOverrides() {
	e := groupconc.New(nil)
	defer e.Close()
	remove, err := e.GuardOverrides(func(groupKey string, o groupconc.GroupOverride) error {
		if o.MaxConcurrency != nil && *o.MaxConcurrency > 4 {
			return errors.New("at most 4: the rest is shared with other replicas")
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	defer remove()
	h, _ := groupconc.Submit(context.Background(), e, "acme", "t", exBlockUntil(closed(), ""))
	h.Wait()
	n := 8
	fmt.Println(e.SetGroupOverride("acme", groupconc.GroupOverride{MaxConcurrency: &n}))
	// Output: at most 4: the rest is shared with other replicas
}

func ExampleGroupOverride_IsZero() {
	n := 2
	fmt.Println(groupconc.GroupOverride{}.IsZero(), groupconc.GroupOverride{Weight: &n}.IsZero())
	// Output: true false
}

func ExampleRejection_Run() {
	// A handler that runs a rejected task itself, without permits, for one
	// group only, and turns the others away.
	p := exMustBuild(groupconc.NewPolicyBuilder().
		DefaultQueueThresholdPerGroup(0).
		RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) {
			if r.GroupKey == "critical" {
				return r.Run(ctx)
			}
			return nil, &groupconc.RejectedError{GroupKey: r.GroupKey, TaskID: r.TaskID, Reason: r.Reason}
		}))
	e := groupconc.New(p)
	defer e.Close()
	gate := make(chan struct{})
	defer close(gate)
	for _, g := range []string{"critical", "bulk"} {
		_, _ = groupconc.Submit(context.Background(), e, g, "first", exBlockUntil(gate, ""))
		h, _ := groupconc.Submit(context.Background(), e, g, "second", exBlockUntil(closed(), "ran anyway"))
		r := h.Wait()
		fmt.Println(g, r.Status, r.Value)
	}
	// Output:
	// critical SUCCESS ran anyway
	// bulk REJECTED
}

func ExampleTaskHandle_Wait() {
	e := groupconc.New(nil)
	defer e.Close()
	h, _ := groupconc.Submit(context.Background(), e, "g", "t", func(context.Context) (int, error) {
		return 0, errors.New("backend down")
	})
	r := h.Wait() // the task's failure is in the result
	fmt.Println(r.Status, r.Err)
	// Output: FAILED backend down
}

func ExampleTaskHandle_Done() {
	e := groupconc.New(nil)
	defer e.Close()
	h, _ := groupconc.Submit(context.Background(), e, "g", "t", exBlockUntil(closed(), "ok"))
	select {
	case <-h.Done():
		fmt.Println(h.Wait().Value)
	case <-time.After(time.Minute):
		fmt.Println("still running")
	}
	// Output: ok
}

func ExampleTaskHandle_IsDone() {
	e := groupconc.New(nil)
	defer e.Close()
	gate := make(chan struct{})
	h, _ := groupconc.Submit(context.Background(), e, "g", "t", exBlockUntil(gate, ""))
	fmt.Println(h.IsDone())
	close(gate)
	h.Wait()
	fmt.Println(h.IsDone())
	// Output:
	// false
	// true
}

func ExampleTaskHandle_GroupKey() {
	e := groupconc.New(nil)
	defer e.Close()
	h, _ := groupconc.Submit(context.Background(), e, "tenant-42", "invoice-7", exBlockUntil(closed(), ""))
	fmt.Println(h.GroupKey(), h.TaskID())
	// Output: tenant-42 invoice-7
}

func ExampleTaskHandle_TaskID() {
	e := groupconc.New(nil)
	defer e.Close()
	var handles []*groupconc.TaskHandle[string]
	for _, id := range []string{"a", "b"} {
		h, _ := groupconc.Submit(context.Background(), e, "g", id, exBlockUntil(closed(), id))
		handles = append(handles, h)
	}
	for _, h := range handles {
		fmt.Println(h.TaskID(), h.Wait().Value)
	}
	// Output:
	// a a
	// b b
}

func ExampleGroupResult_QueueWait() {
	e := groupconc.New(nil) // one task at a time per group
	defer e.Close()
	gate := make(chan struct{})
	first, _ := groupconc.Submit(context.Background(), e, "g", "first", exBlockUntil(gate, ""))
	second, _ := groupconc.Submit(context.Background(), e, "g", "second", exBlockUntil(closed(), ""))
	time.Sleep(20 * time.Millisecond) // second waits for first
	close(gate)
	first.Wait()
	r := second.Wait()
	fmt.Println(r.QueueWait() >= 20*time.Millisecond, r.Start.Sub(r.Submitted) == r.QueueWait())
	// Output: true true
}

func ExampleGroupResult_Duration() {
	e := groupconc.New(nil)
	defer e.Close()
	h, _ := groupconc.Submit(context.Background(), e, "g", "t", func(context.Context) (string, error) {
		time.Sleep(10 * time.Millisecond)
		return "", nil
	})
	r := h.Wait()
	fmt.Println(r.Duration() >= 10*time.Millisecond, r.End.Sub(r.Start) == r.Duration())
	// Output: true true
}

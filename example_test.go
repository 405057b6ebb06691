package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

func ExampleGroupExecutor_Shutdown() {
	ctx := context.Background()

	// A graceful shutdown lets every accepted task finish.
	e := groupconc.New(nil)
	var handles []*groupconc.TaskHandle[string]
	for _, id := range []string{"a", "b", "c"} {
		h, err := groupconc.Submit(ctx, e, "jobs", id, func(context.Context) (string, error) {
			return "done " + id, nil
		})
		if err != nil {
			fmt.Println("submit:", err)
			return
		}
		handles = append(handles, h)
	}
	fmt.Println("shutdown:", e.Shutdown(ctx))
	for _, h := range handles {
		fmt.Println(h.Wait().Value)
	}
	_, err := groupconc.Submit(ctx, e, "jobs", "late", exBlockUntil(nil, "never"))
	fmt.Println("late submit:", err)

	// A shutdown whose context ends first cancels what is left, with cause
	// ErrClosed, and returns the context's error.
	e = groupconc.New(nil)
	var cause error
	started := make(chan struct{})
	h, err := groupconc.Submit(ctx, e, "jobs", "stuck", func(ctx context.Context) (string, error) {
		close(started)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return "", ctx.Err()
	})
	if err != nil {
		fmt.Println("submit:", err)
		return
	}
	<-started
	sctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	fmt.Println("shutdown:", e.Shutdown(sctx))
	fmt.Println("stuck:", h.Wait().Status)
	fmt.Println("cause:", cause)
	// Close is idempotent; after a Shutdown it has nothing left to do.
	_ = e.Close()
	// Output:
	// shutdown: <nil>
	// done a
	// done b
	// done c
	// late submit: groupconc: executor closed
	// shutdown: context deadline exceeded
	// stuck: CANCELLED
	// cause: groupconc: executor closed
}

func ExampleGroupExecutor_ShutdownGroup() {
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2)))
	defer e.Close()
	ctx := context.Background()

	gate := make(chan struct{})
	noisy, _ := groupconc.Submit(ctx, e, "noisy", "n1", exBlockUntil(gate, "n1"))
	quiet, _ := groupconc.Submit(ctx, e, "quiet", "q1", exBlockUntil(gate, "q1"))

	// Only the noisy group's tasks are cancelled.
	e.ShutdownGroup("noisy")
	fmt.Println("noisy:", noisy.Wait().Status)

	close(gate)
	fmt.Println("quiet:", quiet.Wait().Status)

	// The group stays usable.
	again, _ := groupconc.Submit(ctx, e, "noisy", "n2", exBlockUntil(gate, "n2"))
	fmt.Println("noisy again:", again.Wait().Status)
	// Output:
	// noisy: CANCELLED
	// quiet: SUCCESS
	// noisy again: SUCCESS
}

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

func ExampleRejectionPolicy_abort() {
	e := groupconc.New(exRejectingPolicy(groupconc.RejectAbort))
	defer e.Close()
	ctx := context.Background()

	gate := make(chan struct{})
	busy, _ := groupconc.Submit(ctx, e, "api", "busy", exBlockUntil(gate, "done"))

	// The group is busy and may not queue, so Submit rejects the task
	// before it returns. Submit itself reports no error: the handle does.
	h, err := groupconc.Submit(ctx, e, "api", "extra", exBlockUntil(gate, "done"))
	fmt.Println("submit error:", err)
	r, err := h.Await(ctx)
	fmt.Println(r.Status)
	fmt.Println("await error:", err)
	var rejected *groupconc.RejectedError
	if errors.As(err, &rejected) {
		fmt.Println("reason:", rejected.Reason)
	}
	fmt.Println("is ErrRejected:", errors.Is(err, groupconc.ErrRejected))

	close(gate)
	fmt.Println("busy:", busy.Wait().Status)
	// Output:
	// submit error: <nil>
	// REJECTED
	// await error: groupconc: task "extra" of group "api" rejected: group_queue_full
	// reason: group_queue_full
	// is ErrRejected: true
	// busy: SUCCESS
}

func ExampleRejectionPolicy_discard() {
	e := groupconc.New(exRejectingPolicy(groupconc.RejectDiscard))
	defer e.Close()
	ctx := context.Background()

	gate := make(chan struct{})
	busy, _ := groupconc.Submit(ctx, e, "metrics", "busy", exBlockUntil(gate, "done"))
	h, _ := groupconc.Submit(ctx, e, "metrics", "extra", exBlockUntil(gate, "done"))

	// Discarded: the result says REJECTED, but Await reports no error.
	r, err := h.Await(ctx)
	fmt.Println(r.Status, err)
	fmt.Println("result carries:", errors.Is(r.Err, groupconc.ErrRejected))

	close(gate)
	fmt.Println("busy:", busy.Wait().Status)
	// Output:
	// REJECTED <nil>
	// result carries: true
	// busy: SUCCESS
}

func ExampleRejectionPolicy_callerRuns() {
	e := groupconc.New(exRejectingPolicy(groupconc.RejectCallerRuns))
	defer e.Close()
	ctx := context.Background()

	gate := make(chan struct{})
	busy, _ := groupconc.Submit(ctx, e, "mail", "busy", exBlockUntil(gate, "done"))

	// The rejected task runs anyway, at once and without a permit: it
	// finishes while "busy" still holds the group's only permit.
	h, _ := groupconc.Submit(ctx, e, "mail", "extra", func(context.Context) (string, error) {
		return "sent without a permit", nil
	})
	r, err := h.Await(ctx)
	fmt.Println(r.Status, r.Value, err)
	fmt.Println("busy done:", busy.IsDone())

	close(gate)
	fmt.Println("busy:", busy.Wait().Status)
	// Output:
	// SUCCESS sent without a permit <nil>
	// busy done: false
	// busy: SUCCESS
}

func ExampleRejectionHandler() {
	// The handler replaces the rejection policy. Here VIP tasks run anyway
	// (without a permit), and every other rejected task gets a cached value.
	handler := func(ctx context.Context, r *groupconc.Rejection) (any, error) {
		if strings.HasPrefix(r.TaskID, "vip-") {
			return r.Run(ctx)
		}
		return "cached price", nil
	}
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		DefaultQueueThresholdPerGroup(0).
		RejectionHandler(handler)))
	defer e.Close()
	ctx := context.Background()

	gate := make(chan struct{})
	busy, _ := groupconc.Submit(ctx, e, "pricing", "busy", exBlockUntil(gate, "fresh price"))
	price := func(context.Context) (string, error) { return "fresh price", nil }
	var handles []*groupconc.TaskHandle[string]
	for _, id := range []string{"anon-1", "vip-1"} {
		h, _ := groupconc.Submit(ctx, e, "pricing", id, price)
		handles = append(handles, h)
	}
	for _, h := range handles {
		r := h.Wait()
		fmt.Println(r.TaskID, r.Status, r.Value)
	}

	close(gate)
	r := busy.Wait()
	fmt.Println(r.TaskID, r.Status, r.Value)
	// Output:
	// anon-1 SUCCESS cached price
	// vip-1 SUCCESS fresh price
	// busy SUCCESS fresh price
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

func ExampleGroupExecutor_EvictGroup() {
	// The resolver's answer can change; a group keeps the limit it got on
	// first use until it is evicted.
	var limit atomic.Int64
	limit.Store(1)
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		ConcurrencyResolver(func(string) int { return int(limit.Load()) })))
	defer e.Close()
	ctx := context.Background()

	noop := func(context.Context) (struct{}, error) { return struct{}{}, nil }
	h, _ := groupconc.Submit(ctx, e, "tenant", "t1", noop)
	h.Wait()
	g, _ := e.GroupStats("tenant")
	fmt.Println("limit:", g.MaxConcurrency)

	limit.Store(3)
	g, _ = e.GroupStats("tenant")
	fmt.Println("still:", g.MaxConcurrency)

	e.EvictGroup("tenant")
	_, ok := e.GroupStats("tenant")
	fmt.Println("known after evict:", ok)

	h, _ = groupconc.Submit(ctx, e, "tenant", "t2", noop)
	h.Wait()
	g, _ = e.GroupStats("tenant")
	fmt.Println("limit:", g.MaxConcurrency)
	// Output:
	// limit: 1
	// still: 1
	// known after evict: false
	// limit: 3
}

func ExampleGroupExecutor_Close() {
	e := groupconc.New(nil)
	ctx := context.Background()

	started := make(chan struct{})
	h, err := groupconc.Submit(ctx, e, "jobs", "long", func(ctx context.Context) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	if err != nil {
		fmt.Println("submit:", err)
		return
	}
	<-started
	// Close cancels every task and returns at once.
	fmt.Println("close:", e.Close())
	r := h.Wait()
	fmt.Println(r.Status, r.Err)

	_, err = groupconc.Submit(ctx, e, "jobs", "late", exBlockUntil(nil, "never"))
	fmt.Println(errors.Is(err, groupconc.ErrClosed))
	// Output:
	// close: <nil>
	// CANCELLED context canceled
	// true
}

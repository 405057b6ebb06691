package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kobe/groupconc"
)

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

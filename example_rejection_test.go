package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kobe/groupconc"
)

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

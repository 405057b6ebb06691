package groupconc_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kobe/groupconc"
)

// Examples of the policy builder's settings and the policy's accessors.

func ExampleDefaultPolicy() {
	p := groupconc.DefaultPolicy()
	fmt.Println(p.ResolveConcurrency("any"), p.GlobalMaxInFlight() == groupconc.Unlimited, p.Isolation())
	// Output: 1 true off
}

func ExamplePolicyBuilder_Build() {
	_, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(0).
		DefaultQueueThresholdPerGroup(-1).
		Build()
	fmt.Println(err)
	// Output: groupconc: invalid policy: DefaultMaxConcurrencyPerGroup is 0, want >= 1; DefaultQueueThresholdPerGroup is -1, want >= 0
}

func ExamplePolicyBuilder_PerGroupMaxConcurrency() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"premium": 8}))
	fmt.Println(p.ResolveConcurrency("premium"), p.ResolveConcurrency("free"))
	// Output: 8 1
}

func ExamplePolicyBuilder_ConcurrencyResolver() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"vip": 16}).
		ConcurrencyResolver(func(key string) int {
			if len(key) > 4 && key[:4] == "pro-" {
				return 4
			}
			return 0 // below 1: becomes 1
		}))
	fmt.Println(p.ResolveConcurrency("vip"), p.ResolveConcurrency("pro-acme"), p.ResolveConcurrency("free-bob"))
	// Output: 16 4 1
}

func ExamplePolicyBuilder_DefaultMaxConcurrencyPerGroup() {
	p := exMustBuild(groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(3))
	fmt.Println(p.ResolveConcurrency("any"))
	// Output: 3
}

func ExamplePolicyBuilder_GlobalMaxInFlight() {
	p := exMustBuild(groupconc.NewPolicyBuilder().GlobalMaxInFlight(64))
	fmt.Println(p.GlobalMaxInFlight())
	// Output: 64
}

func ExamplePolicyBuilder_DefaultMaxInFlightPerGroup() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(2).
		DefaultMaxInFlightPerGroup(10)) // 2 running, 8 past the bulkhead waiting
	fmt.Println(p.ResolveMaxInFlight("any"))
	// Output: 10
}

func ExamplePolicyBuilder_PerGroupMaxInFlight() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		PerGroupMaxInFlight(map[string]int{"batch": 4}))
	fmt.Println(p.ResolveMaxInFlight("batch"), p.ResolveMaxInFlight("web") == groupconc.Unlimited)
	// Output: 4 true
}

func ExamplePolicyBuilder_GlobalQueueThreshold() {
	// Under IsolationOff tasks wait for a global permit first: this
	// threshold is the one that bounds that wait.
	p := exMustBuild(groupconc.NewPolicyBuilder().
		GlobalMaxInFlight(16).
		GlobalQueueThreshold(100))
	fmt.Println(p.GlobalQueueThreshold())
	// Output: 100
}

func ExamplePolicyBuilder_DefaultQueueThresholdPerGroup() {
	// Under IsolationFairShare a group's threshold counts its waiting
	// tasks at every layer, so it bounds each group's backlog.
	p := exMustBuild(groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		GlobalMaxInFlight(16).
		DefaultMaxConcurrencyPerGroup(2).
		DefaultQueueThresholdPerGroup(10))
	e := groupconc.New(p)
	defer e.Close()

	gate := make(chan struct{})
	var statuses []groupconc.TaskStatus
	var handles []*groupconc.TaskHandle[string]
	for i := range 13 { // 2 run, 10 wait, the 13th is rejected
		h, _ := groupconc.Submit(context.Background(), e, "acme", fmt.Sprint(i), exBlockUntil(gate, "ok"))
		handles = append(handles, h)
	}
	close(gate)
	for _, h := range handles {
		statuses = append(statuses, h.Wait().Status)
	}
	fmt.Println(statuses[11], statuses[12])
	// Output: SUCCESS REJECTED
}

func ExamplePolicyBuilder_PerGroupQueueThreshold() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		DefaultQueueThresholdPerGroup(10).
		PerGroupQueueThreshold(map[string]int{"batch": 1000, "interactive": 0}))
	fmt.Println(p.ResolveQueueThreshold("batch"), p.ResolveQueueThreshold("interactive"), p.ResolveQueueThreshold("other"))
	// Output: 1000 0 10
}

func ExamplePolicyBuilder_RejectionPolicy() {
	p := exMustBuild(groupconc.NewPolicyBuilder().RejectionPolicy(groupconc.RejectDiscard))
	b, _ := p.MarshalJSON()
	fmt.Println(groupconc.RejectDiscard, string(b) != "")
	// Output: RejectDiscard true
}

func ExamplePolicyBuilder_RejectionHandler() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		DefaultQueueThresholdPerGroup(0).
		RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) {
			return "fallback for " + r.TaskID, nil // a value of the task's type: SUCCESS
		}))
	e := groupconc.New(p)
	defer e.Close()
	gate := make(chan struct{})
	first, _ := groupconc.Submit(context.Background(), e, "g", "first", exBlockUntil(gate, "ran"))
	second, _ := groupconc.Submit(context.Background(), e, "g", "second", exBlockUntil(gate, "ran"))
	r := second.Wait()
	close(gate)
	fmt.Println(r.Status, r.Value)
	fmt.Println(first.Wait().Value)
	// Output:
	// SUCCESS fallback for second
	// ran
}

func ExamplePolicyBuilder_TaskLifecycleListener() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		TaskLifecycleListener(groupconc.ListenerFuncs{
			Completed: func(groupKey, taskID string, r groupconc.GroupResult[any]) {
				fmt.Println("completed", groupKey, taskID, r.Status)
			},
		}))
	e := groupconc.New(p)
	defer e.Close()
	h, _ := groupconc.Submit(context.Background(), e, "g", "t1", exBlockUntil(nil, "")) // a nil gate: never closes
	h.Cancel()
	_ = e.Shutdown(context.Background()) // the listener is told once the function returns

	// Output: completed g t1 CANCELLED
}

func ExamplePolicyBuilder_Isolation() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		GlobalMaxInFlight(16))
	fmt.Println(p.Isolation())
	// Output: fair-share
}

func ExamplePolicyBuilder_PerGroupWeight() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		PerGroupWeight(map[string]int{"premium": 4}))
	fmt.Println(p.ResolveWeight("premium"), p.ResolveWeight("free"))
	// Output: 4 1
}

func ExamplePolicyBuilder_WeightResolver() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		WeightResolver(func(key string) int { return len(key) }))
	fmt.Println(p.ResolveWeight("ab"), p.ResolveWeight("abcd"))
	// Output: 2 4
}

func ExamplePolicyBuilder_DefaultWeightPerGroup() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		DefaultWeightPerGroup(2))
	fmt.Println(p.ResolveWeight("any"))
	// Output: 2
}

func ExamplePolicyBuilder_IdleGroupTTL() {
	p := exMustBuild(groupconc.NewPolicyBuilder().IdleGroupTTL(10 * time.Minute))
	e := groupconc.New(p)
	defer e.Close()
	h, _ := groupconc.Submit(context.Background(), e, "user-42", "t", exBlockUntil(closed(), "ok"))
	h.Wait()
	_, known := e.GroupStats("user-42")
	fmt.Println(p.IdleGroupTTL(), known) // forgotten once idle for 10m
	// Output: 10m0s true
}

// halve is an AdaptiveLimit that halves the limit on every sample.
type halve struct{ min int }

func (h *halve) Observe(s groupconc.LimitSample) int { return max(h.min, s.Limit/2) }

func ExamplePolicyBuilder_AdaptiveConcurrency() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(8).
		AdaptiveConcurrency(groupconc.AdaptiveConfig{
			New: func(groupKey string, min, max int) groupconc.AdaptiveLimit { return &halve{min} },
			Min: 2,
		}))
	e := groupconc.New(p)
	defer e.Close()
	for i := range 3 {
		h, _ := groupconc.Submit(context.Background(), e, "g", fmt.Sprint(i), exBlockUntil(closed(), ""))
		h.Wait()
		gs, _ := e.GroupStats("g")
		fmt.Print(gs.MaxConcurrency, " ")
	}
	fmt.Println()
	// Output: 4 2 2
}

func ExamplePolicyBuilder_AdaptiveGlobal() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare). // the global cap adapts under fair share only
		GlobalMaxInFlight(16).
		DefaultMaxConcurrencyPerGroup(16).
		AdaptiveGlobal(groupconc.AdaptiveConfig{
			New: func(groupKey string, min, max int) groupconc.AdaptiveLimit { return &halve{min} },
			Min: 4,
		}))
	e := groupconc.New(p)
	defer e.Close()
	h, _ := groupconc.Submit(context.Background(), e, "g", "t", exBlockUntil(closed(), ""))
	h.Wait()
	fmt.Println(e.Stats().GlobalMaxInFlight)
	// Output: 8
}

func ExamplePolicyBuilder_LimitChanges() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(8).
		AdaptiveConcurrency(groupconc.AdaptiveConfig{
			New: func(groupKey string, min, max int) groupconc.AdaptiveLimit { return &halve{min} },
		}).
		LimitChanges(func(c groupconc.LimitChange) {
			fmt.Printf("%s: %d -> %d\n", c.GroupKey, c.Old, c.New)
		}))
	e := groupconc.New(p)
	defer e.Close()
	h, _ := groupconc.Submit(context.Background(), e, "g", "t", exBlockUntil(closed(), ""))
	h.Wait()
	// Output: g: 8 -> 4
}

func ExampleGroupPolicy_ResolveConcurrency() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"a": 5}).
		DefaultMaxConcurrencyPerGroup(2))
	fmt.Println(p.ResolveConcurrency("a"), p.ResolveConcurrency("b"))
	// Output: 5 2
}

func ExampleGroupPolicy_ResolveMaxInFlight() {
	p := exMustBuild(groupconc.NewPolicyBuilder().DefaultMaxInFlightPerGroup(6))
	fmt.Println(p.ResolveMaxInFlight("a"))
	// Output: 6
}

func ExampleGroupPolicy_ResolveQueueThreshold() {
	p := groupconc.DefaultPolicy()
	fmt.Println(p.ResolveQueueThreshold("a") == groupconc.Unlimited)
	// Output: true
}

func ExampleGroupPolicy_ResolveWeight() {
	p := groupconc.DefaultPolicy()
	fmt.Println(p.ResolveWeight("a"))
	// Output: 1
}

func ExampleGroupPolicy_GlobalMaxInFlight() {
	fmt.Println(groupconc.DefaultPolicy().GlobalMaxInFlight() == groupconc.Unlimited)
	// Output: true
}

func ExampleGroupPolicy_GlobalQueueThreshold() {
	p := exMustBuild(groupconc.NewPolicyBuilder().GlobalQueueThreshold(0))
	fmt.Println(p.GlobalQueueThreshold())
	// Output: 0
}

func ExampleGroupPolicy_IdleGroupTTL() {
	fmt.Println(groupconc.DefaultPolicy().IdleGroupTTL())
	// Output: 0s
}

func ExampleGroupPolicy_Isolation() {
	fmt.Println(groupconc.DefaultPolicy().Isolation())
	// Output: off
}

func ExampleGroupPolicy_Explain() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"premium": 8}).
		DefaultMaxConcurrencyPerGroup(2))
	for _, key := range []string{"premium", "free"} {
		x := p.Explain(key).MaxConcurrency
		fmt.Println(key, x.Value, x.Source, len(x.Stack))
	}
	// Output:
	// premium 8 group 3
	// free 2 default 2
}

func ExampleGroupPolicy_MarshalJSON() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(2).
		GlobalMaxInFlight(64))
	b, err := p.MarshalJSON()
	if err != nil {
		panic(err)
	}
	back, err := groupconc.ParsePolicy(b)
	if err != nil {
		panic(err)
	}
	q := exMustBuild(back)
	fmt.Println(q.ResolveConcurrency("x"), q.GlobalMaxInFlight())
	// Output: 2 64
}

// closed returns a closed channel: a task gated on it returns at once.
func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

package groupconc_test

import (
	"context"
	"fmt"

	"github.com/kobe/groupconc"
)

func ExamplePolicyBuilder_PressureWarnings() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		PressureWarnings(groupconc.PressureConfig{BacklogCount: 2}, func(w groupconc.PressureWarning) {
			fmt.Println(w.GroupKey, w.Trigger, w.Waiting) // runs inside Submit: keep it quick
		}))
	e := groupconc.New(p)
	defer e.Close()
	gate := make(chan struct{})
	defer close(gate)
	for i := range 3 { // one runs, two wait: the second waiting one fires
		_, _ = groupconc.Submit(context.Background(), e, "reports", fmt.Sprint(i), exBlockUntil(gate, ""))
	}
	// Output: reports backlog-count 2
}

func ExamplePolicyBuilder_PressureWarningFunc() {
	b, err := groupconc.ParsePolicy([]byte(`{"pressure": {"backlogCount": 1}}`))
	if err != nil {
		panic(err)
	}
	e := groupconc.New(exMustBuild(b.PressureWarningFunc(func(w groupconc.PressureWarning) {
		fmt.Println("warning:", w.GroupKey, w.Waiting)
	})))
	defer e.Close()
	gate := make(chan struct{})
	defer close(gate)
	for i := range 2 {
		_, _ = groupconc.Submit(context.Background(), e, "g", fmt.Sprint(i), exBlockUntil(gate, ""))
	}
	// Output: warning: g 1
}

func ExampleGroupExecutor_WatchPressure() {
	p := exMustBuild(groupconc.NewPolicyBuilder().
		PressureWarnings(groupconc.PressureConfig{BacklogCount: 1}, nil)) // thresholds only, no function
	e := groupconc.New(p)
	defer e.Close()
	stop := e.WatchPressure(func(w groupconc.PressureWarning) {
		fmt.Println("alert:", w.GroupKey, w.Trigger, w.Waiting) // runs inside Submit: keep it quick
	})
	defer stop()
	gate := make(chan struct{})
	defer close(gate)
	for i := range 2 { // one runs, one waits: the count is reached
		_, _ = groupconc.Submit(context.Background(), e, "reports", fmt.Sprint(i), exBlockUntil(gate, ""))
	}
	// Output: alert: reports backlog-count 1
}

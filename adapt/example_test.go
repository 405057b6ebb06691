package adapt_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
)

// Each group starts at the limit the policy resolves, 64, and its queue
// threshold follows its limit: half of it.
func Example() {
	p, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(64).
		AdaptiveConcurrency(groupconc.AdaptiveConfig{
			New:         adapt.GradientConfig{}.New,
			Min:         2,
			QueueFactor: 0.5,
		}).
		LimitChanges(func(c groupconc.LimitChange) {
			fmt.Printf("%s: limit %d -> %d\n", c.GroupKey, c.Old, c.New)
		}).
		Build()
	if err != nil {
		panic(err)
	}
	e := groupconc.New(p)
	defer e.Close()
	h, _ := groupconc.Submit(context.Background(), e, "tenant-a", "t1", func(context.Context) (string, error) {
		return "done", nil
	})
	h.Wait()
	s, _ := e.GroupStats("tenant-a")
	fmt.Println(s.MaxConcurrency, s.QueueThreshold)
	// Output: 64 32
}

// A Gradient fed the run times of a backend of 8 cores shared by the
// tasks it runs at its limit: up to 8 tasks take 10ms each, 64 take 80ms.
// The first window runs while the limit fills, the next ones at a full
// limit. The limit halves while the run times fall, one step past the
// capacity. Then it takes the capacity it measured. Each window (100ms,
// 25 samples) is decided on as the first sample after it arrives.
func ExampleGradient() {
	g := adapt.NewGradient(1, 64, adapt.GradientConfig{MinSamples: 25})
	at := time.Unix(0, 0)
	for w := range 10 {
		for range 25 {
			n := g.Limit()
			if w == 0 {
				n = 8
			}
			at = at.Add(4 * time.Millisecond)
			run := 10 * time.Millisecond * time.Duration(max(n, 8)) / 8
			g.Observe(groupconc.LimitSample{Status: groupconc.StatusSuccess, RunTime: run, Running: n, Limit: g.Limit(), End: at})
		}
		fmt.Print(g.Limit(), " ")
	}
	fmt.Println()
	// Output: 64 64 32 16 8 4 8 9 9 8
}

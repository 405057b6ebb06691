package groupconc_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/kobe/groupconc"
)

// A policy read from a JSON file, with a code hook added before Build: the
// file holds the limits, the code the resolver.
func ExampleParsePolicy() {
	data, err := os.ReadFile("testdata/policy.json")
	if err != nil {
		log.Fatal(err)
	}
	b, err := groupconc.ParsePolicy(data)
	if err != nil {
		log.Fatal(err)
	}
	policy, err := b.ConcurrencyResolver(func(key string) int {
		if strings.HasPrefix(key, "gold-") {
			return 6
		}
		panic("not a gold tenant") // falls back to the default
	}).Build()
	if err != nil {
		log.Fatal(err)
	}
	for _, key := range []string{"premium", "gold-7", "free-3"} {
		fmt.Printf("%s: concurrency %d, queue %d, weight %d\n",
			key, policy.ResolveConcurrency(key), policy.ResolveQueueThreshold(key), policy.ResolveWeight(key))
	}
	// Output:
	// premium: concurrency 8, queue 100, weight 4
	// gold-7: concurrency 6, queue 100, weight 1
	// free-3: concurrency 2, queue 100, weight 1
}

// A strict reading: every bad value is named by its JSON path.
func ExampleParsePolicy_errors() {
	_, err := groupconc.ParsePolicy([]byte(`{
		"perGroupMaxConcurrency": {"a": -1},
		"idleGroupTTL": 90,
		"maxConcurency": 2
	}`))
	fmt.Println(err)
	// Output:
	// groupconc: invalid policy: perGroupMaxConcurrency["a"]: -1 is below 1; idleGroupTTL: 90 is not a Go duration string such as "90s"; maxConcurency: unknown field
}

// An operator's override, above the policy, and where each limit comes
// from.
func ExampleGroupExecutor_ExplainGroup() {
	policy, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(2).
		PerGroupMaxConcurrency(map[string]int{"premium": 8}).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()
	h, _ := groupconc.Submit(context.Background(), e, "premium", "t1", func(context.Context) (int, error) { return 1, nil })
	h.Wait() // the group exists from its first task on

	four := 4
	if err := e.SetGroupOverride("premium", groupconc.GroupOverride{MaxConcurrency: &four}); err != nil {
		log.Fatal(err)
	}
	x, _ := e.ExplainGroup("premium")
	fmt.Println("concurrency", x.MaxConcurrency.Value, "from", x.MaxConcurrency.Source)
	for _, c := range x.MaxConcurrency.Stack {
		fmt.Printf("  %s: %d\n", c.Source, c.Value)
	}
	fmt.Println("queue threshold from", x.QueueThreshold.Source)

	err = e.SetGroupOverride("unknown", groupconc.GroupOverride{MaxConcurrency: &four})
	fmt.Println(err)
	// Output:
	// concurrency 4 from override
	//   override: 4
	//   group: 8
	//   default: 2
	//   builtin: 1
	// queue threshold from builtin
	// groupconc: unknown group "unknown": never used, or evicted, or forgotten as idle
}

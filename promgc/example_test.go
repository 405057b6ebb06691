package promgc_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
	"github.com/prometheus/client_golang/prometheus"
)

// Wiring: the listener goes into the policy, before the executor exists;
// the collector is made for the executor and registered.
func Example() {
	m, err := promgc.New(promgc.Options{
		ExecutorName: "api",
		// One "group" label value per tier, not per tenant.
		GroupClass: func(tenant string) string {
			tier, _, _ := strings.Cut(tenant, "/")
			return tier
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	policy, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(2).
		TaskLifecycleListener(m.Listener()).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collector(e))

	for _, tenant := range []string{"gold/acme", "gold/globex", "free/initech"} {
		h, err := groupconc.Submit(context.Background(), e, tenant, "report", func(ctx context.Context) (int, error) {
			return 42, nil
		})
		if err != nil {
			log.Fatal(err)
		}
		h.Wait()
	}
	if err := e.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}

	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		switch f.GetName() {
		case "groupconc_groups", "groupconc_tasks_completed_total", "groupconc_task_run_seconds":
			for _, s := range f.GetMetric() {
				var labels []string
				for _, l := range s.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				name, v := f.GetName(), s.GetGauge().GetValue()+s.GetCounter().GetValue()
				if h := s.GetHistogram(); h != nil {
					name, v = name+"_count", float64(h.GetSampleCount())
				}
				fmt.Println(name, strings.Join(labels, " "), v)
			}
		}
	}
	// Output:
	// groupconc_groups executor=api group=free 1
	// groupconc_groups executor=api group=gold 2
	// groupconc_task_run_seconds_count executor=api group=free 1
	// groupconc_task_run_seconds_count executor=api group=gold 2
	// groupconc_tasks_completed_total executor=api status=cancelled 0
	// groupconc_tasks_completed_total executor=api status=failed 0
	// groupconc_tasks_completed_total executor=api status=rejected 0
	// groupconc_tasks_completed_total executor=api status=success 3
}

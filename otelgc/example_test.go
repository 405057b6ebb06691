package otelgc_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Wiring: the listener goes into the policy, before the executor exists;
// Observe is called with the executor. A ManualReader stands in for an
// exporter here.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	m, err := otelgc.New(otelgc.Options{
		MeterProvider: mp,
		// One groupconc.group value per tier, not per tenant.
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
	reg, err := m.Observe(e)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Unregister()

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

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				if mt.Name == "groupconc.group.count" || mt.Name == "groupconc.task.submitted" {
					for _, p := range d.DataPoints {
						fmt.Println(mt.Name, mt.Unit, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value)
					}
				}
			case metricdata.Histogram[float64]:
				if mt.Name == "groupconc.task.run.duration" {
					for _, p := range d.DataPoints {
						fmt.Println(mt.Name, mt.Unit, p.Attributes.Encoded(attribute.DefaultEncoder()), "count", p.Count)
					}
				}
			}
		}
	}
	// Unordered output:
	// groupconc.group.count {group} groupconc.group=free 1
	// groupconc.group.count {group} groupconc.group=gold 2
	// groupconc.task.submitted {task}  3
	// groupconc.task.run.duration s groupconc.group=free count 1
	// groupconc.task.run.duration s groupconc.group=gold count 2
}

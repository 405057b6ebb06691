// Command usercheck is what a user of groupconc builds outside its
// repository: .ci/run copies it to a temporary directory and builds it
// against every module at the release version, served by a module proxy,
// with no replace directive. imports.go lists every package a release
// offers; this file runs an executor watched by promgc and otelgc and
// coordinated by redisgc (which never dials Redis here: Run is not called),
// and builds a gRPC server limited by grpcgc (which never serves).
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
	"github.com/kobe/groupconc/otelgc"
	"github.com/kobe/groupconc/promgc"
	"github.com/kobe/groupconc/redisgc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
)

func main() {
	log.SetFlags(0)
	prom, err := promgc.New(promgc.Options{ExecutorName: "usercheck"})
	if err != nil {
		log.Fatal(err)
	}
	otel, err := otelgc.New(otelgc.Options{ExecutorName: "usercheck"})
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(nil)
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	fleet, err := redisgc.New(client, e, redisgc.Options{
		Limits: map[string]int{"tenant-a": 2},
		Base: func() *groupconc.PolicyBuilder {
			return groupconc.NewPolicyBuilder().
				TaskLifecycleListener(groupconc.Listeners(prom.Listener(), otel.Listener()))
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer fleet.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.Collector(e))
	observed, err := otel.Observe(e)
	if err != nil {
		log.Fatal(err)
	}
	defer observed.Unregister()
	server := grpc.NewServer(
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, grpcgc.WithKeyFromMetadata("x-tenant"))),
		grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e)),
	)
	defer server.Stop()

	double := func(n int) groupconc.Task[int] {
		return func(context.Context) (int, error) { return 2 * n, nil }
	}
	results, err := groupconc.ExecuteAll(context.Background(), e, []groupconc.GroupTask[int]{
		{GroupKey: "tenant-a", TaskID: "1", Task: double(1)},
		{GroupKey: "tenant-a", TaskID: "2", Task: double(2)},
		{GroupKey: "tenant-b", TaskID: "3", Task: double(3)},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		if r.Status != groupconc.StatusSuccess {
			log.Fatalf("task %s/%s: %v %v", r.GroupKey, r.TaskID, r.Status, r.Err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("usercheck: %d tasks, %d metric families, coordinator %v\n",
		len(results), len(families), fleet.Status().Mode)
}

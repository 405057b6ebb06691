package grpcgc_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Group by service, so every method of one service shares its limit.
func ExampleWithKeyFunc() {
	byService := grpcgc.WithKeyFunc(func(_ context.Context, fullMethod string) string {
		service, _, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
		return service
	})
	b, sub, _ := watched()
	e := newExecutor(b)
	defer e.Shutdown(context.Background())
	sopts := []grpc.ServerOption{grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, byService))}
	run(&health{}, sopts, nil, func(c healthpb.HealthClient) {
		_, err := c.Check(context.Background(), req)
		fmt.Println(status.Code(err), <-sub)
	})
	// Output:
	// OK grpc.health.v1.Health
}

func ExampleWithKeyFromMetadata() {
	b, sub, _ := watched()
	e := newExecutor(b)
	defer e.Shutdown(context.Background())
	sopts := []grpc.ServerOption{grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, grpcgc.WithKeyFromMetadata("x-tenant")))}
	run(&health{}, sopts, nil, func(c healthpb.HealthClient) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-tenant", "acme")
		_, err := c.Check(ctx, req)
		fmt.Println(status.Code(err), <-sub)
		// Without the header, the call takes the default key.
		_, err = c.Check(context.Background(), req)
		fmt.Println(status.Code(err), <-sub)
	})
	// Output:
	// OK acme
	// OK /grpc.health.v1.Health/Check
}

// Health checks go before other work waiting in the same lines.
func ExampleWithPriorityFunc() {
	e := newExecutor(groupconc.NewPolicyBuilder())
	defer e.Shutdown(context.Background())
	prio := grpcgc.WithPriorityFunc(func(_ context.Context, fullMethod string) groupconc.Priority {
		if strings.HasPrefix(fullMethod, "/grpc.health.v1.Health/") {
			return groupconc.PriorityHighest
		}
		return groupconc.PriorityNormal
	})
	sopts := []grpc.ServerOption{grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, prio))}
	run(&health{}, sopts, nil, func(c healthpb.HealthClient) {
		_, err := c.Check(context.Background(), req)
		fmt.Println(status.Code(err))
	})
	// Output:
	// OK
}

func ExampleWithPriorityFromMetadata() {
	e := newExecutor(groupconc.NewPolicyBuilder())
	defer e.Shutdown(context.Background())
	sopts := []grpc.ServerOption{grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, grpcgc.WithPriorityFromMetadata("x-priority")))}
	run(&health{}, sopts, nil, func(c healthpb.HealthClient) {
		for _, p := range []string{"high", "urgent"} {
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-priority", p)
			_, err := c.Check(ctx, req)
			fmt.Println(p+":", status.Code(err))
		}
	})
	// Output:
	// high: OK
	// urgent: InvalidArgument
}

func ExampleWithCostFunc() {
	e := newExecutor(groupconc.NewPolicyBuilder())
	defer e.Shutdown(context.Background())
	cost := grpcgc.WithCostFunc(func(context.Context, string) int { return 1 })
	sopts := []grpc.ServerOption{grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, cost))}
	run(&health{}, sopts, nil, func(c healthpb.HealthClient) {
		_, err := c.Check(context.Background(), req)
		fmt.Println(status.Code(err))
	})
	// Output:
	// OK
}

func ExampleWithCostFromMetadata() {
	e := newExecutor(groupconc.NewPolicyBuilder())
	defer e.Shutdown(context.Background())
	sopts := []grpc.ServerOption{grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, grpcgc.WithCostFromMetadata("x-cost")))}
	run(&health{}, sopts, nil, func(c healthpb.HealthClient) {
		for _, cost := range []string{"1", "many"} {
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-cost", cost)
			_, err := c.Check(ctx, req)
			fmt.Println(cost+":", status.Code(err))
		}
	})
	// Output:
	// 1: OK
	// many: InvalidArgument
}

// A call waits up to MaxWait for a queue slot before it is turned away.
// Without Block, the second call here would be turned away at once with
// ResourceExhausted, as its method's queue has no slots.
func ExampleWithSubmitOptions() {
	e := newExecutor(groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
	defer e.Shutdown(context.Background())
	h := newSlowHealth()
	wait := grpcgc.WithSubmitOptions(groupconc.SubmitOptions{Block: true, MaxWait: time.Minute})
	sopts := []grpc.ServerOption{grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, wait))}
	run(h, sopts, nil, func(c healthpb.HealthClient) {
		first := make(chan error)
		go func() { _, err := c.Check(context.Background(), req); first <- err }()
		<-h.entered
		second := make(chan error)
		go func() { _, err := c.Check(context.Background(), req); second <- err }()
		for e.Stats().Blocked == 0 { // the second call waits for a slot
			runtime.Gosched()
		}
		fmt.Println("blocked:", e.Stats().Blocked)
		close(h.release)
		fmt.Println("first:", status.Code(<-first))
		fmt.Println("second:", status.Code(<-second))
	})
	// Output:
	// blocked: 1
	// first: OK
	// second: OK
}

func ExampleWithRetryPushback() {
	e := newExecutor(groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
	defer e.Shutdown(context.Background())
	h := newSlowHealth()
	pushback := grpcgc.WithRetryPushback(2 * time.Second)
	sopts := []grpc.ServerOption{grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, pushback))}
	run(h, sopts, nil, func(c healthpb.HealthClient) {
		first := make(chan error)
		go func() { _, err := c.Check(context.Background(), req); first <- err }()
		<-h.entered
		var trailer metadata.MD
		_, err := c.Check(context.Background(), req, grpc.Trailer(&trailer))
		fmt.Println(status.Code(err), trailer.Get(grpcgc.PushbackHeader))
		close(h.release)
		<-first
	})
	// Output:
	// ResourceExhausted [2000]
}

package grpcgc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// slowHealth is a health service whose calls wait until release closes.
// Its entered channel gets a value as each call starts.
type slowHealth struct {
	healthpb.UnimplementedHealthServer
	entered chan struct{}
	release chan struct{}
}

func newSlowHealth() *slowHealth {
	return &slowHealth{entered: make(chan struct{}, 10), release: make(chan struct{})}
}

func (h *slowHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.entered <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (h *slowHealth) Watch(_ *healthpb.HealthCheckRequest, ss healthpb.Health_WatchServer) error {
	if err := ss.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
		return err
	}
	h.entered <- struct{}{}
	select {
	case <-h.release:
		return nil
	case <-ss.Context().Done():
		return ss.Context().Err()
	}
}

// run serves h on 127.0.0.1 with the server options, dials it with the
// dial options, calls f with a client, and stops both.
func run(h healthpb.HealthServer, sopts []grpc.ServerOption, dopts []grpc.DialOption, f func(healthpb.HealthClient)) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer(sopts...)
	healthpb.RegisterHealthServer(s, h)
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	defer func() { s.Stop(); <-served }()
	dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	cc, err := grpc.NewClient(lis.Addr().String(), dopts...)
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	f(healthpb.NewHealthClient(cc))
}

// newExecutor builds an executor or ends the example.
func newExecutor(b *groupconc.PolicyBuilder) *groupconc.GroupExecutor {
	p, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	return groupconc.New(p)
}

var req = &healthpb.HealthCheckRequest{}

// A server that runs each tenant's calls one at a time, with no queue: a
// call that finds its tenant busy is turned away at once.
func Example() {
	e := newExecutor(groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
	defer e.Shutdown(context.Background())
	h := newSlowHealth()
	tenantKey := grpcgc.WithKeyFromMetadata("x-tenant")
	sopts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(grpcgc.UnaryServerInterceptor(e, tenantKey)),
		grpc.ChainStreamInterceptor(grpcgc.StreamServerInterceptor(e, tenantKey)),
	}
	run(h, sopts, nil, func(c healthpb.HealthClient) {
		acme := metadata.AppendToOutgoingContext(context.Background(), "x-tenant", "acme")
		globex := metadata.AppendToOutgoingContext(context.Background(), "x-tenant", "globex")
		first := make(chan error)
		go func() { _, err := c.Check(acme, req); first <- err }()
		<-h.entered

		_, err := c.Check(acme, req)
		fmt.Println("acme again:", status.Code(err))
		go func() { <-h.entered; close(h.release) }()
		_, err = c.Check(globex, req)
		fmt.Println("globex:", status.Code(err))
		fmt.Println("acme's first:", status.Code(<-first))
	})
	// Output:
	// acme again: ResourceExhausted
	// globex: OK
	// acme's first: OK
}

func ExampleUnaryServerInterceptor() {
	e := newExecutor(groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
	defer e.Shutdown(context.Background())
	h := newSlowHealth()
	sopts := []grpc.ServerOption{grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e))}
	run(h, sopts, nil, func(c healthpb.HealthClient) {
		first := make(chan error)
		go func() { _, err := c.Check(context.Background(), req); first <- err }()
		<-h.entered

		var trailer metadata.MD
		_, err := c.Check(context.Background(), req, grpc.Trailer(&trailer))
		st := status.Convert(err)
		fmt.Println(st.Code())
		fmt.Println(st.Message())
		fmt.Println(grpcgc.PushbackHeader, trailer.Get(grpcgc.PushbackHeader))
		close(h.release)
		fmt.Println("first:", status.Code(<-first))
	})
	// Output:
	// ResourceExhausted
	// grpcgc: call rejected by group "/grpc.health.v1.Health/Check": group_queue_full
	// grpc-retry-pushback-ms [100]
	// first: OK
}

// A stream holds its permits while its handler runs.
func ExampleStreamServerInterceptor() {
	e := newExecutor(groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
	defer e.Shutdown(context.Background())
	h := newSlowHealth()
	sopts := []grpc.ServerOption{grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e))}
	run(h, sopts, nil, func(c healthpb.HealthClient) {
		first, err := c.Watch(context.Background(), req)
		if err != nil {
			log.Fatal(err)
		}
		<-h.entered
		second, err := c.Watch(context.Background(), req)
		if err != nil {
			log.Fatal(err)
		}
		_, err = second.Recv()
		fmt.Println("second:", status.Code(err))
		close(h.release)
		for {
			if _, err := first.Recv(); err != nil {
				fmt.Println("first ends:", err == io.EOF)
				break
			}
		}
	})
	// Output:
	// second: ResourceExhausted
	// first ends: true
}

// The client turns a call away before sending it when its target is busy.
func ExampleUnaryClientInterceptor() {
	e := newExecutor(groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
	defer e.Shutdown(context.Background())
	h := newSlowHealth()
	dopts := []grpc.DialOption{grpc.WithUnaryInterceptor(grpcgc.UnaryClientInterceptor(e))}
	run(h, nil, dopts, func(c healthpb.HealthClient) {
		first := make(chan error)
		go func() { _, err := c.Check(context.Background(), req); first <- err }()
		<-h.entered

		_, err := c.Check(context.Background(), req)
		var re *groupconc.RejectedError
		fmt.Println(status.Code(err), errors.Is(err, groupconc.ErrRejected), errors.As(err, &re) && re.Reason == groupconc.ReasonGroupQueueFull)
		close(h.release)
		fmt.Println("first:", status.Code(<-first))
	})
	// Output:
	// ResourceExhausted true true
	// first: OK
}

// A client stream holds its permits until it ends.
func ExampleStreamClientInterceptor() {
	e := newExecutor(groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2))
	defer e.Shutdown(context.Background())
	h := newSlowHealth()
	dopts := []grpc.DialOption{grpc.WithStreamInterceptor(grpcgc.StreamClientInterceptor(e))}
	run(h, nil, dopts, func(c healthpb.HealthClient) {
		w, err := c.Watch(context.Background(), req)
		if err != nil {
			log.Fatal(err)
		}
		<-h.entered
		fmt.Println("running while open:", e.Stats().Running)
		close(h.release)
		for {
			if _, err := w.Recv(); err != nil {
				break
			}
		}
		fmt.Println("running once ended:", e.Stats().Running)
	})
	// Output:
	// running while open: 1
	// running once ended: 0
}

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
		close(h.release)
		fmt.Println("first:", status.Code(<-first))
		fmt.Println("second:", status.Code(<-second))
	})
	// Output:
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

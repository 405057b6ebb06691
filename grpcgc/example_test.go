package grpcgc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"

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

package grpcgc_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// health is a health service whose Check and Watch run hooks, so a test
// can hold a call inside its handler.
type health struct {
	healthpb.UnimplementedHealthServer
	check func(ctx context.Context, service string) error
	watch func(ctx context.Context, service string, send func() error) error
}

func (h *health) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if h.check != nil {
		if err := h.check(ctx, req.GetService()); err != nil {
			return nil, err
		}
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (h *health) Watch(req *healthpb.HealthCheckRequest, ss healthpb.Health_WatchServer) error {
	send := func() error {
		return ss.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
	}
	if h.watch != nil {
		return h.watch(ss.Context(), req.GetService(), send)
	}
	return send()
}

// serve starts a gRPC server on 127.0.0.1 with the health service and
// the server options, and returns a client connected to it. Both stop when
// the test ends.
func serve(t *testing.T, h *health, sopts []grpc.ServerOption, dopts ...grpc.DialOption) healthpb.HealthClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer(sopts...)
	healthpb.RegisterHealthServer(s, h)
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	t.Cleanup(func() {
		s.Stop()
		<-served
	})
	dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	cc, err := grpc.NewClient(lis.Addr().String(), dopts...)
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	return healthpb.NewHealthClient(cc)
}

// gate holds handlers until it is opened, and records how many ran at once.
type gate struct {
	open    chan struct{}
	entered chan string // gets each handler's service name as it starts
	now     atomic.Int64
	mu      sync.Mutex
	max     map[string]int // the most that ran at once, by service
	running map[string]int // guarded by mu
}

func newGate() *gate {
	return &gate{open: make(chan struct{}), entered: make(chan string, 100), max: map[string]int{}, running: map[string]int{}}
}

// hold is a Check hook that records the call and waits for the gate.
func (g *gate) hold(ctx context.Context, service string) error {
	g.mu.Lock()
	g.running[service]++
	g.max[service] = max(g.max[service], g.running[service])
	g.mu.Unlock()
	g.now.Add(1)
	defer func() {
		g.now.Add(-1)
		g.mu.Lock()
		g.running[service]--
		g.mu.Unlock()
	}()
	g.entered <- service
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) most(service string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max[service]
}

// submitted returns a policy builder whose listener sends each accepted
// task's group key on the channel it returns, and each completed task's
// result on the other.
func watched() (*groupconc.PolicyBuilder, chan string, chan groupconc.GroupResult[any]) {
	sub := make(chan string, 100)
	done := make(chan groupconc.GroupResult[any], 100)
	b := groupconc.NewPolicyBuilder().TaskLifecycleListener(groupconc.ListenerFuncs{
		Submitted: func(g, _ string) { sub <- g },
		Completed: func(_, _ string, r groupconc.GroupResult[any]) { done <- r },
	})
	return b, sub, done
}

// build builds the policy or fails the test.
func build(t *testing.T, b *groupconc.PolicyBuilder) *groupconc.GroupExecutor {
	t.Helper()
	p, err := b.Build()
	require.NoError(t, err)
	e := groupconc.New(p)
	t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })
	return e
}

// recoverer is the recovery interceptor grpc-go leaves to its users.
func recoverer(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = status.Error(codes.Internal, fmt.Sprint("panic: ", v))
		}
	}()
	return handler(ctx, req)
}

// streamRecoverer is recoverer for streams.
func streamRecoverer(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = status.Error(codes.Internal, fmt.Sprint("panic: ", v))
		}
	}()
	return handler(srv, ss)
}

func check(ctx context.Context, c healthpb.HealthClient, service string) error {
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	return err
}

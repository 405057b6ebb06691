// Command grpcserver is a gRPC server with per-tenant limits, through
// grpcgc, and a client that limits its own streams. It listens on a
// loopback port, sends itself calls from two tenants, prints what each got,
// and exits.
//
//	cd examples/grpcserver && go run .
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func main() {
	log.SetFlags(0)
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// service is a health service whose calls wait until release closes, so
// that the program can fill a tenant's limit on purpose.
type service struct {
	healthpb.UnimplementedHealthServer
	entered chan string
	release chan struct{}
}

func (s *service) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s.entered <- req.GetService()
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (s *service) Watch(req *healthpb.HealthCheckRequest, ss healthpb.Health_WatchServer) error {
	if err := ss.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
		return err
	}
	select {
	case <-s.release:
		return nil
	case <-ss.Context().Done():
		return ss.Context().Err()
	}
}

func run(out io.Writer) error {
	// On the server each tenant runs 2 calls at once, and none waits.
	policy, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(2).
		DefaultQueueThresholdPerGroup(0).
		Build()
	if err != nil {
		return err
	}
	server := groupconc.New(policy)
	defer server.Shutdown(context.Background())
	byTenant := grpcgc.WithKeyFromMetadata("x-tenant")
	s := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpcgc.UnaryServerInterceptor(server, byTenant)),
		grpc.ChainStreamInterceptor(grpcgc.StreamServerInterceptor(server, byTenant)),
	)
	svc := &service{entered: make(chan string, 16), release: make(chan struct{})}
	healthpb.RegisterHealthServer(s, svc)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	defer func() { s.Stop(); <-served }()

	// The client opens one stream at a time to this server, with no queue.
	clientPolicy, err := groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0).Build()
	if err != nil {
		return err
	}
	client := groupconc.New(clientPolicy)
	defer client.Shutdown(context.Background())
	cc, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStreamInterceptor(grpcgc.StreamClientInterceptor(client)))
	if err != nil {
		return err
	}
	defer cc.Close()
	c := healthpb.NewHealthClient(cc)

	as := func(tenant string) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), "x-tenant", tenant)
	}
	// Two calls of acme fill its limit and wait inside the handler.
	held := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := c.Check(as("acme"), &healthpb.HealthCheckRequest{Service: fmt.Sprint("acme-", i)})
			held <- err
		}()
		<-svc.entered
	}
	// A third is turned away at once, with a pushback for its retry.
	var trailer metadata.MD
	_, err = c.Check(as("acme"), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	st := status.Convert(err)
	fmt.Fprintf(out, "acme's third call: %v, %q, pushback %v ms\n", st.Code(), st.Message(), trailer.Get(grpcgc.PushbackHeader))

	// globex has limits of its own, so acme's load does not hold it back.
	globex := make(chan error, 1)
	go func() { _, err := c.Check(as("globex"), &healthpb.HealthCheckRequest{}); globex <- err }()
	<-svc.entered
	stats, _ := server.GroupStats("acme")
	fmt.Fprintf(out, "running: acme %d", stats.Running)
	stats, _ = server.GroupStats("globex")
	fmt.Fprintf(out, ", globex %d\n", stats.Running)

	// On the client, one stream holds the only permit for this server.
	w, err := c.Watch(as("globex"), &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	if _, err := w.Recv(); err != nil {
		return err
	}
	_, err = c.Watch(as("globex"), &healthpb.HealthCheckRequest{})
	fmt.Fprintf(out, "a second stream: %v, rejected by the client: %v\n", status.Code(err), errors.Is(err, groupconc.ErrRejected))

	close(svc.release)
	for range 2 {
		if err := <-held; err != nil {
			return err
		}
	}
	if err := <-globex; err != nil {
		return err
	}
	for {
		if _, err := w.Recv(); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
	}
	totals := server.Stats()
	fmt.Fprintf(out, "server: %d calls succeeded, %d rejected; client: %d streams now\n",
		totals.Succeeded, totals.Rejected, client.Stats().Running)
	return nil
}

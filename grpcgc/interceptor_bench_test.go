package grpcgc_test

import (
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// BenchmarkUnaryCall measures one unary call over TCP on 127.0.0.1, plain
// and through the interceptors, so that their cost reads as a ratio.
func BenchmarkUnaryCall(b *testing.B) {
	for _, bc := range []struct {
		name           string
		server, client bool
	}{
		{"plain", false, false},
		{"server", true, false},
		{"client", false, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var sopts []grpc.ServerOption
			var dopts []grpc.DialOption
			e := groupconc.New(nil)
			defer e.Close()
			if bc.server {
				sopts = append(sopts, grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e)))
			}
			if bc.client {
				dopts = append(dopts, grpc.WithUnaryInterceptor(grpcgc.UnaryClientInterceptor(e)))
			}
			run(&health{}, sopts, dopts, func(c healthpb.HealthClient) {
				req := &healthpb.HealthCheckRequest{}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.Check(b.Context(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

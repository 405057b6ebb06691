package grpcgc_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const checkMethod = "/grpc.health.v1.Health/Check"

func tenant(ctx context.Context, name string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-tenant", name)
}

func TestTheLimitHoldsPerTenant(t *testing.T) {
	b, sub, _ := watched()
	e := build(t, b.DefaultMaxConcurrencyPerGroup(2))
	g := newGate()
	c := serve(t, &health{check: g.hold}, []grpc.ServerOption{
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, grpcgc.WithKeyFromMetadata("X-Tenant"))),
	})
	errs := make(chan error, 8)
	for range 4 {
		for _, name := range []string{"a", "b"} {
			go func() { errs <- check(tenant(t.Context(), name), c, name) }()
		}
	}
	for range 8 {
		<-sub
	}
	for range 4 {
		<-g.entered
	}
	for _, name := range []string{"a", "b"} {
		st, ok := e.GroupStats(name)
		require.True(t, ok)
		assert.Equal(t, 2, st.Running, "running in %s", name)
	}
	close(g.open)
	for range 8 {
		assert.NoError(t, <-errs)
	}
	assert.Equal(t, 2, g.most("a"))
	assert.Equal(t, 2, g.most("b"))
}

func TestARejectionIsResourceExhaustedWithPushback(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []grpcgc.Option
		want []string // the pushback trailer
	}{
		{"default", nil, []string{"100"}},
		{"set", []grpcgc.Option{grpcgc.WithRetryPushback(2500 * time.Millisecond)}, []string{"2500"}},
		{"no retry", []grpcgc.Option{grpcgc.WithRetryPushback(-1)}, []string{"-1"}},
		{"none", []grpcgc.Option{grpcgc.WithRetryPushback(0)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := build(t, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
			g := newGate()
			c := serve(t, &health{check: g.hold}, []grpc.ServerOption{
				grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, tc.opts...)),
			})
			held := make(chan error, 1)
			go func() { held <- check(t.Context(), c, "held") }()
			<-g.entered

			var trailer metadata.MD
			_, err := c.Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
			st := status.Convert(err)
			assert.Equal(t, codes.ResourceExhausted, st.Code())
			assert.Equal(t, `grpcgc: call rejected by group "`+checkMethod+`": group_queue_full`, st.Message())
			assert.Equal(t, tc.want, trailer.Get(grpcgc.PushbackHeader))
			close(g.open)
			assert.NoError(t, <-held)
		})
	}
}

func TestAFullGlobalQueueIsUnavailable(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder().GlobalMaxInFlight(1).GlobalQueueThreshold(0))
	g := newGate()
	c := serve(t, &health{check: g.hold}, []grpc.ServerOption{
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, grpcgc.WithKeyFromMetadata("x-tenant"))),
	})
	held := make(chan error, 1)
	go func() { held <- check(tenant(t.Context(), "a"), c, "a") }()
	<-g.entered

	var trailer metadata.MD
	_, err := c.Check(tenant(t.Context(), "b"), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	st := status.Convert(err)
	assert.Equal(t, codes.Unavailable, st.Code())
	assert.Equal(t, `grpcgc: call rejected by group "b": global_queue_full`, st.Message())
	assert.Equal(t, []string{"100"}, trailer.Get(grpcgc.PushbackHeader))
	close(g.open)
	assert.NoError(t, <-held)
}

func TestACallCancelledWhileItWaitsNeverRuns(t *testing.T) {
	b, sub, done := watched()
	e := build(t, b)
	g := newGate()
	c := serve(t, &health{check: g.hold}, []grpc.ServerOption{
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e)),
	})
	held := make(chan error, 1)
	go func() { held <- check(t.Context(), c, "held") }()
	<-sub
	<-g.entered

	ctx, cancel := context.WithCancel(t.Context())
	waiting := make(chan error, 1)
	go func() { waiting <- check(ctx, c, "waiting") }()
	<-sub
	cancel()
	assert.Equal(t, codes.Canceled, status.Code(<-waiting))
	r := <-done
	assert.Equal(t, groupconc.StatusCancelled, r.Status, "the waiting call's task")

	close(g.open)
	assert.NoError(t, <-held)
	assert.Empty(t, g.entered, "a handler ran for the cancelled call")
	assert.Equal(t, 1, g.most("held"))
}

func TestAPanickingHandlerGivesBackItsPermits(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
	boom := func(_ context.Context, service string) error {
		if service == "boom" {
			panic("boom")
		}
		return nil
	}
	c := serve(t, &health{
		check: boom,
		watch: func(ctx context.Context, service string, _ func() error) error { return boom(ctx, service) },
	}, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(recoverer, grpcgc.UnaryServerInterceptor(e)),
		grpc.ChainStreamInterceptor(streamRecoverer, grpcgc.StreamServerInterceptor(e)),
	})
	for range 3 {
		err := check(t.Context(), c, "boom")
		assert.Equal(t, codes.Internal, status.Code(err))
		assert.Contains(t, status.Convert(err).Message(), "panic: boom")
		// With a queue threshold of 0, a permit still held would reject it.
		assert.NoError(t, check(t.Context(), c, "fine"))

		w, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{Service: "boom"})
		require.NoError(t, err)
		_, err = w.Recv()
		assert.Equal(t, codes.Internal, status.Code(err))
	}
	st := e.Stats()
	assert.Zero(t, st.Running)
	assert.Zero(t, st.GlobalInFlight)
	assert.Equal(t, uint64(6), st.Failed, "the panics, counted as failed tasks")
}

func TestAServerStreamHoldsItsPermitsUntilItEnds(t *testing.T) {
	b, _, done := watched()
	e := build(t, b.DefaultQueueThresholdPerGroup(0))
	g := newGate()
	c := serve(t, &health{watch: func(ctx context.Context, _ string, send func() error) error {
		if err := send(); err != nil {
			return err
		}
		<-g.open
		return nil
	}}, []grpc.ServerOption{
		grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e)),
	})
	first, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = first.Recv()
	require.NoError(t, err)

	second, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = second.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, []string{"100"}, second.Trailer().Get(grpcgc.PushbackHeader))
	assert.Equal(t, uint64(1), e.Stats().Rejected)

	close(g.open)
	_, err = first.Recv()
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, groupconc.StatusSuccess, (<-done).Status)

	third, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = third.Recv()
	assert.NoError(t, err)
	_, err = third.Recv()
	assert.ErrorIs(t, err, io.EOF)
}

func TestShutdownGroupCancelsARunningHandler(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder())
	g := newGate()
	c := serve(t, &health{check: g.hold}, []grpc.ServerOption{
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e)),
	})
	held := make(chan error, 1)
	go func() { held <- check(t.Context(), c, "held") }()
	<-g.entered
	e.ShutdownGroup(checkMethod)
	err := <-held
	assert.Equal(t, codes.Canceled, status.Code(err), "got %v", err)
}

func TestPriorityAndCostFromMetadata(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder())
	var ran atomic.Int32
	c := serve(t, &health{}, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(
			grpcgc.UnaryServerInterceptor(e, grpcgc.WithPriorityFromMetadata("x-priority"), grpcgc.WithCostFromMetadata("x-cost")),
			func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				ran.Add(1)
				return handler(ctx, req)
			}),
	})
	for _, tc := range []struct {
		md   []string
		code codes.Code
		msg  string
	}{
		{nil, codes.OK, ""},
		{[]string{"x-priority", "high", "x-cost", "1"}, codes.OK, ""},
		{[]string{"x-priority", "lowest", "x-cost", "0"}, codes.OK, ""},
		{[]string{"x-priority", "urgent"}, codes.InvalidArgument, `grpcgc: metadata x-priority is "urgent", not a priority (highest, high, normal, low or lowest)`},
		{[]string{"x-cost", "-2"}, codes.InvalidArgument, `grpcgc: metadata x-cost is "-2", not a cost (a number from 0)`},
	} {
		ctx := metadata.AppendToOutgoingContext(t.Context(), tc.md...)
		err := check(ctx, c, "")
		assert.Equal(t, tc.code, status.Code(err), "%v: %v", tc.md, err)
		if tc.msg != "" {
			assert.Equal(t, tc.msg, status.Convert(err).Message())
			assert.False(t, errors.Is(err, groupconc.ErrRejected))
		}
	}
	assert.Equal(t, int32(3), ran.Load(), "handlers run")
}

func TestARejectionHandlersValueNeverStandsForAStreamOrANilResponse(t *testing.T) {
	quiet := func(context.Context, *groupconc.Rejection) (any, error) { return nil, nil }
	e := build(t, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0).RejectionHandler(quiet))
	client := build(t, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0).RejectionHandler(quiet))
	g := newGate()
	c := serve(t, &health{check: g.hold, watch: func(ctx context.Context, _ string, send func() error) error {
		if err := send(); err != nil {
			return err
		}
		<-g.open
		return nil
	}}, []grpc.ServerOption{
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e)),
		grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e)),
	}, grpc.WithStreamInterceptor(grpcgc.StreamClientInterceptor(client, grpcgc.WithKeyFromMetadata("x-stream"))))
	held := make(chan error, 1)
	go func() { held <- check(t.Context(), c, "held") }()
	<-g.entered
	err := check(t.Context(), c, "second")
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "rejection_handler")

	a := metadata.AppendToOutgoingContext(t.Context(), "x-stream", "a")
	w, err := c.Watch(a, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w.Recv()
	require.NoError(t, err)
	// The client refuses a second stream of its group a.
	_, err = c.Watch(a, &healthpb.HealthCheckRequest{})
	re := assertRejected(t, err, codes.ResourceExhausted)
	assert.Equal(t, "rejection_handler", re.Reason)
	// The server refuses one of group b, since the first holds Watch's permit.
	b := metadata.AppendToOutgoingContext(t.Context(), "x-stream", "b")
	other, err := c.Watch(b, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = other.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "rejection_handler")
	close(g.open)
	assert.NoError(t, <-held)
	_, err = w.Recv()
	assert.ErrorIs(t, err, io.EOF)
}

// A key the client chose may be refused with an error that names it and
// each of its ancestors. The status message carries a bounded part of it.
func TestAnErrorNamingACallersKeyIsCutInTheStatus(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder().ParentSeparator("/"))
	c := serve(t, &health{}, []grpc.ServerOption{
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, grpcgc.WithKeyFromMetadata("x-tenant-bin"))),
	})
	seg := strings.Repeat("é", 100)
	key := strings.Repeat(seg+"/", 10) + seg // ten ancestors, over the eight allowed
	ctx := metadata.AppendToOutgoingContext(t.Context(), "x-tenant-bin", key)
	err := check(ctx, c, "")
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	msg := status.Convert(err).Message()
	assert.LessOrEqual(t, len(msg), 300, "the message's length")
	assert.True(t, utf8.ValidString(msg), "the message is cut between runes")
	assert.Contains(t, msg, "grpcgc: groupconc: invalid policy")
	_, ok := e.GroupStats(key)
	assert.False(t, ok, "a group of the refused key")
}

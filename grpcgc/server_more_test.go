package grpcgc_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// The pushback goes with a rejection only. A call the executor refuses
// for another reason, here a cost it does not take, ends with its own
// status and no pushback trailer, unary or streaming.
func TestACallRefusedForABadCostCarriesNoPushback(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder())
	var ran atomic.Int32
	bad := grpcgc.WithCostFunc(func(context.Context, string) int { return -1 })
	c := serve(t, &health{
		check: func(context.Context, string) error { ran.Add(1); return nil },
		watch: func(_ context.Context, _ string, send func() error) error { ran.Add(1); return send() },
	}, []grpc.ServerOption{
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, bad)),
		grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e, bad)),
	})
	var trailer metadata.MD
	_, err := c.Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "a unary call: %v", err)
	assert.Empty(t, trailer.Get(grpcgc.PushbackHeader), "a unary call's pushback")

	w, err := c.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w.Recv()
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "a stream: %v", err)
	assert.Empty(t, w.Trailer().Get(grpcgc.PushbackHeader), "a stream's pushback")
	assert.Zero(t, ran.Load(), "handlers run")
}

// An error that names a caller's key is cut between runes, wherever the
// cut falls: the key is shifted by one byte and by two, so that with runes
// of three bytes the cut falls at each place in a rune. A rune cut in two
// would reach the client as U+FFFD, since gRPC sends it so.
func TestAnErrorNamingACallersKeyIsCutBetweenRunesWhereverTheCutFalls(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder().ParentSeparator("/"))
	c := serve(t, &health{}, []grpc.ServerOption{
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, grpcgc.WithKeyFromMetadata("x-tenant-bin"))),
	})
	seg := strings.Repeat("€", 100)
	for shift := range 3 {
		key := strings.Repeat("x", shift) + strings.Repeat(seg+"/", 10) + seg // over the eight ancestors allowed
		ctx := metadata.AppendToOutgoingContext(t.Context(), "x-tenant-bin", key)
		err := check(ctx, c, "")
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		msg := status.Convert(err).Message()
		// gRPC sends a rune cut in two as U+FFFD.
		assert.True(t, utf8.ValidString(msg), "shift %d: %q", shift, msg)
		assert.NotContains(t, msg, string(utf8.RuneError), "shift %d: the message is cut between runes", shift)
		assert.LessOrEqual(t, len(msg), 300, "shift %d: the message's length", shift)
		assert.True(t, strings.HasPrefix(msg, "grpcgc: groupconc: invalid policy"), "shift %d: %q", shift, msg)
	}
}

// A rejection's message names the group by at most 64 bytes of its key,
// the length of the whole after them, since the key is the caller's own.
func TestARejectionNamesALongKeyByItsFirst64Bytes(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
	g := newGate()
	c := serve(t, &health{check: g.hold}, []grpc.ServerOption{
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, grpcgc.WithKeyFromMetadata("x-tenant"))),
	})
	for _, n := range []int{64, 65, 100} {
		key := strings.Repeat("k", n)
		held := make(chan error, 1)
		go func() { held <- check(tenant(t.Context(), key), c, "held") }()
		<-g.entered
		err := check(tenant(t.Context(), key), c, "second")
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "got %v", err)
		want := `grpcgc: call rejected by group "` + key + `": group_queue_full`
		if n > 64 {
			want = `grpcgc: call rejected by group "` + key[:64] + `"... (` + strconv.Itoa(n) + ` bytes): group_queue_full`
		}
		assert.Equal(t, want, status.Convert(err).Message(), "a key of %d bytes", n)
		g.open <- struct{}{}
		assert.NoError(t, <-held)
	}
}

// A stream whose client goes away, and whose handler returns the status
// its Send then gets from gRPC, is a cancelled task, over a real network.
func TestAStreamWhoseClientGoesAwayIsACancelledTask(t *testing.T) {
	b, _, done := watched()
	e := build(t, b)
	sent := make(chan struct{}, 1)
	c := serve(t, &health{watch: func(_ context.Context, _ string, send func() error) error {
		for {
			if err := send(); err != nil {
				return err // gRPC's Canceled status
			}
			select {
			case sent <- struct{}{}:
			default:
			}
		}
	}}, []grpc.ServerOption{grpc.StreamInterceptor(grpcgc.StreamServerInterceptor(e))})
	ctx, cancel := context.WithCancel(t.Context())
	w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w.Recv()
	require.NoError(t, err)
	<-sent
	cancel()
	r := <-done
	assert.Equal(t, groupconc.StatusCancelled, r.Status, "%v", r.Err)
	assert.Equal(t, codes.Canceled, status.Code(r.Err))
}

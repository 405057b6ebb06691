package grpcgc_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/grpcgc"
)

// A key from a binary header may be any bytes: not UTF-8, or 64 KiB
// long. Each is a group of its own. Its rejection names it quoted and
// cut, so the client reads the message as sent. A header sent twice keys
// the call by its first value.
func TestAKeyOfAnyBytesFromMetadataIsAGroupOfItsOwn(t *testing.T) {
	e := build(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
	g := newGate()
	_, addr := serveDuplex(t, &duplex{empty: func(ctx context.Context) error { return g.hold(ctx, "") }},
		grpc.UnaryInterceptor(grpcgc.UnaryServerInterceptor(e, grpcgc.WithKeyFromMetadata("x-tenant-bin"))))
	cc := dial(t, addr)
	keyed := func(keys ...string) context.Context {
		var kv []string
		for _, k := range keys {
			kv = append(kv, "x-tenant-bin", k)
		}
		return metadata.AppendToOutgoingContext(t.Context(), kv...)
	}
	huge := strings.Repeat("k", 1<<16)
	held := make(chan error, 4)
	for _, key := range []string{"\xff\xfe", huge, "other"} {
		go func() { held <- empty(keyed(key), cc) }()
		<-g.entered
	}
	for _, tc := range []struct{ key, named string }{
		{"\xff\xfe", `"\xff\xfe"`},
		{huge, `"` + huge[:64] + `"... (65536 bytes)`},
	} {
		err := empty(keyed(tc.key), cc)
		require.Equal(t, codes.ResourceExhausted, status.Code(err), "got %v", err)
		msg := status.Convert(err).Message()
		assert.Equal(t, "grpcgc: call rejected by group "+tc.named+": group_queue_full", msg)
		assert.True(t, utf8.ValidString(msg))
	}
	// The first value is the key. The group "other" is full, "free" is not.
	err := empty(keyed("other", "free"), cc)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "got %v", err)
	assert.Contains(t, status.Convert(err).Message(), `"other"`)
	go func() { held <- empty(keyed("free", "other"), cc) }()
	<-g.entered
	close(g.open)
	for range 4 {
		assert.NoError(t, <-held)
	}
	_, ok := e.GroupStats(huge)
	assert.True(t, ok, "the huge key's group")
}

package redisgc

import (
	"context"
	"testing"
	"time"
)

// A replica with a shorter LeaseTTL (another fleet on the same Prefix, or a
// change of LeaseTTL rolled out one replica at a time) never shortens the
// expiry of the members key or of a pool. Shortened, they expired while a
// replica with a longer lease still counted on them: Redis forgot its lease
// and its share, and the others took that share while it still ran it.
func TestAShorterLeaseNeverShortensTheFleetsKeys(t *testing.T) {
	f := newScriptFleet(t, 10*time.Second)
	f.pool("long", syncJoin, "g", 12, 12, 6)
	short := f.opts
	short.LeaseTTL = 300 * time.Millisecond
	f.seq++
	req := poolRequest{key: f.opts.groupKey("g"), limit: 12, want: 6, keep: 1}
	if _, err := runSync(context.Background(), f.c, &short, "short", syncJoin, f.seq, []poolRequest{req}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{f.opts.membersKey(), f.opts.groupKey("g")} {
		if left := f.c.PTTL(context.Background(), key).Val(); left < 5*time.Second {
			t.Errorf("%s expires in %v, want about the longer lease's 10s", key, left)
		}
	}
}

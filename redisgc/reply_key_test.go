package redisgc

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// A group key may hold any bytes. The error that names its pool quotes the
// key and cuts it, so a newline or a megabyte of it reaches no log.
func TestASyncErrorQuotesThePoolKeyAndCutsIt(t *testing.T) {
	o := Options{}.withDefaultsOrDie(t)
	for _, g := range []string{"a\nlevel=error msg=forged", "bad\xff", strings.Repeat("k", 1<<20)} {
		req := poolRequest{key: o.groupKey(g), limit: 4, want: 4, keep: 2}
		_, err := runSync(context.Background(), replying(1000, 4, 4, 1), &o, "m", syncRenew, 1, []poolRequest{req})
		if err == nil {
			t.Fatalf("key %.20q: got no error, want one for a share above the limit", g)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !utf8.ValidString(msg) || len(msg) > 300 {
			t.Errorf("key %.20q: got %.300q (%d bytes), want it quoted and cut", g, msg, len(msg))
		}
	}
}

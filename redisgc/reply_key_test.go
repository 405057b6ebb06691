package redisgc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kobe/groupconc"
)

// A group key may hold any bytes. The error that names its pool quotes the
// key and cuts it, so a newline or a megabyte of it reaches no log.
func TestASyncErrorQuotesThePoolKeyAndCutsIt(t *testing.T) {
	o := Options{}.withDefaultsOrDie(t)
	for _, g := range badKeys {
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

// badKeys are group keys a log line cannot carry as they are.
var badKeys = []string{"a\nlevel=error msg=forged", "bad\xff", strings.Repeat("k", 1<<20)}

// quotedAndCut reports whether msg carries no newline, only UTF-8, and no
// megabyte of a key.
func quotedAndCut(msg string) bool {
	return !strings.Contains(msg, "\n") && utf8.ValidString(msg) && len(msg) <= 400
}

// The override guard's refusal (ErrCoordinated) names the group as every
// other error of the package does: quoted and cut.
func TestTheRefusalOfAnOverrideQuotesTheGroupKeyAndCutsIt(t *testing.T) {
	o := Options{DefaultLimit: 4}.withDefaultsOrDie(t)
	for _, g := range badKeys {
		err := o.refuseOverride(g, groupconc.GroupOverride{MaxConcurrency: intp(2)})
		if !errors.Is(err, ErrCoordinated) {
			t.Fatalf("key %.20q: got %v, want ErrCoordinated", g, err)
		}
		if msg := err.Error(); !quotedAndCut(msg) {
			t.Errorf("key %.20q: got %.300q (%d bytes), want it quoted and cut", g, msg, len(msg))
		}
	}
}

// An option naming a bad limit names its group quoted and cut, and a bad
// Prefix too.
func TestAnOptionsErrorQuotesTheGroupKeyAndCutsIt(t *testing.T) {
	for _, g := range badKeys {
		for _, o := range []Options{{Limits: map[string]int{g: 0}}, {Prefix: g + "}"}} {
			_, err := o.withDefaults()
			if err == nil {
				t.Fatalf("key %.20q: got no error", g)
			}
			if msg := err.Error(); !quotedAndCut(msg) {
				t.Errorf("key %.20q: got %.300q (%d bytes), want it quoted and cut", g, msg, len(msg))
			}
		}
	}
}

// A fleet key of another type fails the sync with an error naming the key
// quoted and cut, though the script that finds it runs in Redis.
func TestAKeyOfAnotherTypeIsNamedQuotedAndCut(t *testing.T) {
	s := startRedis(t)
	admin := s.client(t)
	o := Options{}.withDefaultsOrDie(t)
	for i, g := range badKeys {
		key := o.groupKey(g)
		if err := admin.Set(context.Background(), key, "not a hash", 0).Err(); err != nil {
			t.Fatal(err)
		}
		req := poolRequest{key: key, limit: 4, want: 4, keep: 1}
		_, err := runSync(context.Background(), admin, &o, "m", syncJoin, uint64(i+1), []poolRequest{req})
		if err == nil || !strings.Contains(err.Error(), "holds a string") {
			t.Fatalf("key %.20q: got %v, want an error naming the key's type", g, err)
		}
		if msg := err.Error(); !quotedAndCut(msg) {
			t.Errorf("key %.20q: got %.300q (%d bytes), want it quoted and cut", g, msg, len(msg))
		}
	}
}

// A key cut to 64 bytes is cut before a character, not through it, as the
// core's errors cut theirs: the quote shows no broken byte.
func TestAKeyIsCutBeforeACharacter(t *testing.T) {
	for _, g := range []string{strings.Repeat("é", 100), "k" + strings.Repeat("日", 100), "kk" + strings.Repeat("🙂", 50)} {
		q := quote(g)
		if strings.Contains(q, `\x`) || !strings.Contains(q, "... (") {
			t.Errorf("key %.20q: got %s, want it cut before a character", g, q)
		}
	}
}

package redisgc

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/redis/go-redis/v9"
)

// fakeScripter answers every sync with what reply returns for its keys.
type fakeScripter struct {
	redis.Scripter // nil: a sync calls only EvalSha, and Eval after NOSCRIPT
	reply          func(ctx context.Context, keys []string) *redis.Cmd
}

func (f fakeScripter) EvalSha(ctx context.Context, _ string, keys []string, _ ...any) *redis.Cmd {
	return f.reply(ctx, keys)
}

func (f fakeScripter) Eval(ctx context.Context, _ string, keys []string, _ ...any) *redis.Cmd {
	return f.reply(ctx, keys)
}

// replying is a server whose every sync gets pool for each of its pools.
func replying(pool ...int64) fakeScripter {
	return fakeScripter{reply: func(_ context.Context, keys []string) *redis.Cmd {
		vals := []any{"ok", int64(0)}
		for range keys[4:] { // members, born, seq and server, then the pools
			for _, v := range pool {
				vals = append(vals, v)
			}
		}
		return redis.NewCmdResult(vals, nil)
	}}
}

func TestASyncReplyOutsideTheScriptsBoundsIsAnErrorNamingIt(t *testing.T) {
	o := Options{}.withDefaultsOrDie(t)
	req := poolRequest{key: "{groupconc}:g:t", limit: 4, want: 4, keep: 2}
	for _, tc := range []struct {
		name  string
		reply []int64 // share, target, used, members
		keep  int
		err   string // "" for none
	}{
		{"within the limit", []int64{4, 4, 4, 2}, 2, ""},
		{"a declaration above the limit", []int64{6, 4, 6, 1}, 6, ""},
		{"target above the limit, kept more", []int64{6, 6, 6, 1}, 6, "target 6, want 0 to 4"},
		{"share above the limit", []int64{1000, 4, 4, 1}, 2, "share 1000, want 0 to 4"},
		{"share above what is kept", []int64{7, 4, 7, 1}, 6, "share 7, want 0 to 6"},
		{"target above the limit", []int64{4, 5, 4, 1}, 2, "target 5, want 0 to 4"},
		{"negative share", []int64{-1, 1, 1, 1}, 2, "share -1"},
		{"negative used", []int64{1, 1, -3, 1}, 2, "used -3"},
		{"negative members", []int64{1, 1, 1, -1}, 2, "members -1"},
	} {
		r := req
		r.keep = tc.keep
		_, err := runSync(context.Background(), replying(tc.reply...), &o, "m", syncRenew, 1, []poolRequest{r})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: got %v, want no error", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), req.key)):
			t.Errorf("%s: got %v, want an error naming %s and %q", tc.name, err, req.key, tc.err)
		}
	}
}

// A reply that is not the script's shape is an error naming what is wrong:
// a grace below 0, a value that is not an integer, too few values.
func TestASyncReplyOfAnotherShapeIsAnErrorNamingIt(t *testing.T) {
	o := Options{}.withDefaultsOrDie(t)
	req := []poolRequest{{key: "{groupconc}:g:t", limit: 4, want: 4, keep: 2}}
	for _, tc := range []struct {
		name  string
		reply []any
		err   string
	}{
		{"negative grace", []any{"ok", int64(-5), int64(1), int64(1), int64(1), int64(1)}, "grace -5ms, want 0 or more"},
		{"a string", []any{"ok", int64(0), "1", int64(1), int64(1), int64(1)}, "unexpected value 1"},
		{"too short", []any{"ok", int64(0), int64(1)}, "unexpected reply"},
		{"empty", []any{}, "unexpected reply"},
		{"not ok", []any{"no", int64(0), int64(1), int64(1), int64(1), int64(1)}, "unexpected reply"},
	} {
		client := fakeScripter{reply: func(context.Context, []string) *redis.Cmd { return redis.NewCmdResult(tc.reply, nil) }}
		_, err := runSync(context.Background(), client, &o, "m", syncRenew, 1, req)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %v, want an error naming %q", tc.name, err, tc.err)
		}
	}
}

// TestAReplyAboveTheFleetLimitIsAnErrorAndIsNotApplied: a server answering
// with shares of 1000 for a fleet limit of 4 used to be obeyed, and one
// replica ran 40 tasks. Now the reply is an error in Status.Err, and the
// replica stays at the 1 it runs until it has joined.
func TestAReplyAboveTheFleetLimitIsAnErrorAndIsNotApplied(t *testing.T) {
	exec := groupconc.New(nil)
	gate := make(chan struct{})
	t.Cleanup(func() {
		close(gate)
		_ = exec.Shutdown(context.Background())
	})
	var entered atomic.Int64
	for range 10 {
		_, err := groupconc.Submit(context.Background(), exec, "t", "x", func(context.Context) (struct{}, error) {
			entered.Add(1)
			<-gate
			return struct{}{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(replying(1000, 1000, 1000, 1), exec, Options{Limits: map[string]int{"t": 4}, LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	synced := make(chan Status, 1)
	c.onPublish = func(s Status) {
		if s.Err != nil || s.Mode != ModeJoining {
			select {
			case synced <- s:
			default:
			}
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Run(context.Background()) }()
	st := <-synced // after the first reply
	if st.Mode != ModeJoining || st.Err == nil || !strings.Contains(st.Err.Error(), "{groupconc}:g:t") ||
		!strings.Contains(st.Err.Error(), "share 1000") {
		t.Errorf("after a reply of share 1000 for limit 4: got mode %v, error %v, want joining and an error naming the share", st.Mode, st.Err)
	}
	for _, sh := range st.Groups {
		if sh.Limit > 4 || sh.Share > 4 {
			t.Errorf("the replica took %+v, above the fleet limit 4", sh)
		}
	}
	_ = c.Close()
	if err := <-errc; err != ErrClosed {
		t.Errorf("Run after Close: got %v, want ErrClosed", err)
	}
	if gs, _ := exec.GroupStats("t"); gs.MaxConcurrency > 1 || entered.Load() > 1 {
		t.Errorf("the executor's limit is %d and it ran %d tasks, want 1: the replica never joined", gs.MaxConcurrency, entered.Load())
	}
}

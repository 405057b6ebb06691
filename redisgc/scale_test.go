package redisgc

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kobe/groupconc"
)

// TestATickReadsTheActiveGroupsAlone: the executor remembers a thousand
// idle groups and runs one task. A tick reads that one group, not the
// thousand, so its cost does not grow with the groups remembered.
func TestATickReadsTheActiveGroupsAlone(t *testing.T) {
	exec := groupconc.New(nil)
	defer exec.Close()
	ctx := context.Background()
	for i := range 1000 {
		h, err := groupconc.Submit(ctx, exec, fmt.Sprint("user-", i), "job", func(context.Context) (int, error) { return 0, nil })
		if err != nil {
			t.Fatal(err)
		}
		h.Wait()
	}
	gate := make(chan struct{})
	defer close(gate)
	started := make(chan struct{})
	if _, err := groupconc.Submit(ctx, exec, "t", "job", func(context.Context) (int, error) {
		close(started)
		<-gate
		return 0, nil
	}); err != nil {
		t.Fatal(err)
	}
	<-started

	seen := map[string]load{}
	(&execTarget{exec: exec}).groups(func(g string, l load) bool {
		seen[g] = l
		return true
	})
	if want := map[string]load{"t": {running: 1}}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("a tick read %d groups (%v...), want %v", len(seen), first(seen), want)
	}
}

func first(m map[string]load) string {
	for g := range m {
		return g
	}
	return ""
}

// slowTarget is a fakeExec that remembers groups, and whose executor
// takes perGroup for each to change its limits, as UpdatePolicy does. It
// records when each change of limits was in force.
type slowTarget struct {
	*fakeExec
	n        int // the groups it remembers
	perGroup time.Duration
	applied  []time.Time
}

func (s *slowTarget) remembered() int { return s.n }

func (s *slowTarget) apply(limits map[string]int, global int) error {
	time.Sleep(s.perGroup * time.Duration(s.n)) // fake clock: the change of limits takes its time
	s.applied = append(s.applied, time.Now())
	return s.fakeExec.apply(limits, global)
}

// fallBackBy runs c's fallback check every tick until it falls back, and
// fails t unless the fallback's limits were in force by the lease's
// deadline.
func fallBackBy(t *testing.T, c *Coordinator, target *slowTarget) {
	t.Helper()
	for c.mode != ModeFallback {
		if err := c.fallBackIfDue(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // fake clock: Run's ticks
	}
	if at := target.applied[len(target.applied)-1]; at.After(c.deadline) {
		t.Fatalf("the fallback's limits were in force %v after the lease's deadline", at.Sub(c.deadline))
	}
}

// TestTheFallbackIsInForceByTheLeasesDeadline: an executor that takes 2s
// to change its limits (a thousand groups, 2ms each). A replica whose
// lease's deadline is 5s away falls back 2s before it, so that the lowered
// limits are in force by then. So it does if the executor took 20ms at its
// last change of limits, when it remembered 10 groups.
func TestTheFallbackIsInForceByTheLeasesDeadline(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never called
	defer client.Close()
	for _, before := range []int{1000, 10} {
		t.Run(fmt.Sprint("groups at the last change=", before), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				target := &slowTarget{fakeExec: newFakeExec(), n: before, perGroup: 2 * time.Millisecond}
				c, err := newCoordinator(client, target, testOptions(12))
				if err != nil {
					t.Fatal(err)
				}
				target.n = 1000
				c.member, c.mode = "m", ModeConnected
				c.deadline = time.Now().Add(5 * time.Second)
				fallBackBy(t, c, target)
			})
		})
	}
}

// okScripter answers every sync "ok", as Redis does for an idle replica.
// It counts the syncs by mode.
type okScripter struct {
	mu    sync.Mutex
	modes map[string]int
}

func (s *okScripter) reply(ctx context.Context, args []any) *redis.Cmd {
	s.mu.Lock()
	s.modes[args[2].(string)]++
	s.mu.Unlock()
	cmd := redis.NewCmd(ctx)
	cmd.SetVal([]any{"ok", int64(0)})
	return cmd
}

func (s *okScripter) Eval(ctx context.Context, _ string, _ []string, args ...any) *redis.Cmd {
	return s.reply(ctx, args)
}

func (s *okScripter) EvalSha(ctx context.Context, _ string, _ []string, args ...any) *redis.Cmd {
	return s.reply(ctx, args)
}

func (s *okScripter) EvalRO(ctx context.Context, _ string, _ []string, args ...any) *redis.Cmd {
	return s.reply(ctx, args)
}

func (s *okScripter) EvalShaRO(ctx context.Context, _ string, _ []string, args ...any) *redis.Cmd {
	return s.reply(ctx, args)
}

func (s *okScripter) ScriptExists(ctx context.Context, _ ...string) *redis.BoolSliceCmd {
	return redis.NewBoolSliceCmd(ctx)
}

func (s *okScripter) ScriptLoad(ctx context.Context, _ string) *redis.StringCmd {
	return redis.NewStringCmd(ctx)
}

// TestAnIdleReplicaWithASlowExecutorRenewsInTime: Redis answers every sync
// at once, and the executor takes 6s to change its limits, more than a
// lease (10s) less a RenewInterval (3.3s) leaves. Nothing is faulty, so the
// idle replica renews before its fallback would come, and stays joined.
func TestAnIdleReplicaWithASlowExecutorRenewsInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &okScripter{modes: map[string]int{}}
		target := &slowTarget{fakeExec: newFakeExec(), n: 1000, perGroup: 6 * time.Millisecond}
		c, err := newCoordinator(sc, target, Options{Limits: map[string]int{"t": 12}, LeaseTTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		fallbacks := 0
		c.onPublish = func(s Status) {
			mu.Lock()
			defer mu.Unlock()
			if s.Mode == ModeFallback {
				fallbacks++
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		time.Sleep(2 * time.Minute) // fake clock: two minutes of ticks
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		sc.mu.Lock()
		defer sc.mu.Unlock()
		if fallbacks > 1 || sc.modes["join"] != 1 || sc.modes["renew"] < 10 {
			t.Fatalf("fell back %d times, synced %v: want one join and renewals", fallbacks, sc.modes)
		}
	})
}

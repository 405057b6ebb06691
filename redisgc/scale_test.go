package redisgc

import (
	"context"
	"fmt"
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

// slowTarget is a fakeExec whose executor takes cost to take new limits,
// as UpdatePolicy does over many remembered groups. It records when each
// change of limits was in force.
type slowTarget struct {
	*fakeExec
	cost    time.Duration
	applied []time.Time
}

func (s *slowTarget) apply(limits map[string]int, global int) error {
	time.Sleep(s.cost) // fake clock: the change of limits takes cost
	s.applied = append(s.applied, time.Now())
	return s.fakeExec.apply(limits, global)
}

// TestTheFallbackIsInForceByTheLeasesDeadline: an executor that takes 2s
// to change its limits. A replica whose lease's deadline is 5s away falls
// back 2s before it, so that the lowered limits are in force by then.
func TestTheFallbackIsInForceByTheLeasesDeadline(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never called
	defer client.Close()
	synctest.Test(t, func(t *testing.T) {
		target := &slowTarget{fakeExec: newFakeExec(), cost: 2 * time.Second}
		c, err := newCoordinator(client, target, testOptions(12))
		if err != nil {
			t.Fatal(err)
		}
		c.member, c.mode = "m", ModeConnected
		c.deadline = time.Now().Add(5 * time.Second)
		for c.mode != ModeFallback {
			if err := c.fallBackIfDue(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // fake clock: Run's ticks
		}
		if at := target.applied[len(target.applied)-1]; at.After(c.deadline) {
			t.Fatalf("the fallback's limits were in force %v after the lease's deadline", at.Sub(c.deadline))
		}
	})
}

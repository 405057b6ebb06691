package redisgc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kobe/groupconc"
)

func intp(n int) *int { return &n }

// TestACoordinatedExecutorRefusesOverridesTheNextSyncWouldUndo: while it
// coordinates, an override of a coordinated group's concurrency is refused
// with an error saying why; every other override reaches the executor and
// outlives the syncs that move the shares.
func TestACoordinatedExecutorRefusesOverridesTheNextSyncWouldUndo(t *testing.T) {
	s := startRedis(t)
	exec := groupconc.New(nil)
	defer exec.Close()
	gate := make(chan struct{})
	var hs []*groupconc.TaskHandle[int]
	for _, g := range []string{"t", "free"} {
		for range 3 {
			h, err := groupconc.Submit(context.Background(), exec, g, "x", func(context.Context) (int, error) {
				<-gate
				return 0, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
		}
	}
	defer func() {
		close(gate)
		for _, h := range hs {
			h.Wait()
		}
	}()
	opts := Options{Limits: map[string]int{"t": 10}, LeaseTTL: 300 * time.Millisecond}

	if err := exec.SetGroupOverride("t", groupconc.GroupOverride{MaxConcurrency: intp(5)}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(s.client(t), exec, opts); !errors.Is(err, ErrCoordinated) {
		t.Fatalf("New over an override of a coordinated limit: got %v, want ErrCoordinated", err)
	}
	if err := exec.SetGroupOverride("t", groupconc.GroupOverride{}); err != nil {
		t.Fatalf("the refused New left a guard behind: %v", err)
	}

	c, err := New(s.client(t), exec, opts)
	if err != nil {
		t.Fatal(err)
	}
	err = exec.SetGroupOverride("t", groupconc.GroupOverride{MaxConcurrency: intp(5)})
	if !errors.Is(err, ErrCoordinated) || !strings.Contains(err.Error(), `group "t" runs at most 10 tasks across the replicas`) {
		t.Fatalf("an override of a coordinated concurrency: got %v, want ErrCoordinated saying why", err)
	}
	for g, o := range map[string]groupconc.GroupOverride{
		"t":    {QueueThreshold: intp(50), MaxInFlight: intp(8)},
		"free": {MaxConcurrency: intp(2)},
	} {
		if err := exec.SetGroupOverride(g, o); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
	}

	errc := make(chan error, 1)
	go func() { errc <- c.Run(context.Background()) }()
	eventually(t, 5*time.Second, func() bool { gs, _ := exec.GroupStats("t"); return gs.MaxConcurrency == 3 },
		"the coordinated group never got the share its 3 tasks want")
	tgs, _ := exec.GroupStats("t")
	fgs, _ := exec.GroupStats("free")
	if tgs.QueueThreshold != 50 || tgs.MaxInFlight != 8 || fgs.MaxConcurrency != 2 {
		t.Errorf("after a sync: t's threshold %d and bulkhead %d, free's concurrency %d; want the overrides 50, 8 and 2",
			tgs.QueueThreshold, tgs.MaxInFlight, fgs.MaxConcurrency)
	}
	x, _ := exec.ExplainGroup("t")
	if x.MaxConcurrency.Source != groupconc.SourceGroup || x.QueueThreshold.Source != groupconc.SourceOverride {
		t.Errorf("explained: concurrency from %s, threshold from %s; want group (the share) and override", x.MaxConcurrency.Source, x.QueueThreshold.Source)
	}

	_ = c.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: got %v, want ErrClosed", err)
	}
	if err := exec.SetGroupOverride("t", groupconc.GroupOverride{MaxConcurrency: intp(5)}); err != nil {
		t.Errorf("after Close the coordinator no longer owns t's concurrency: got %v", err)
	}
}

// TestACoordinatorThatStopsTakesItsGuardOff: once Run has returned, or
// Close came before any Run, nothing sets the coordinated limits, so the
// executor takes overrides again (before Close, for a Run whose ctx ended).
func TestACoordinatorThatStopsTakesItsGuardOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, c *Coordinator)
	}{
		{"Run ended by its context", func(t *testing.T, c *Coordinator) {
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- c.Run(ctx) }()
			eventually(t, 5*time.Second, func() bool { return c.Status().Mode == ModeConnected }, "never joined")
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: got %v, want context.Canceled", err)
			}
		}},
		{"Close with no Run", func(t *testing.T, c *Coordinator) {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRedis(t)
			exec := groupconc.New(nil)
			defer exec.Close()
			gate := make(chan struct{})
			defer close(gate) // before Close
			submitGated(t, exec, "t", 1, gate)
			c, err := New(s.client(t), exec, Options{Limits: map[string]int{"t": 10}, LeaseTTL: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			override := groupconc.GroupOverride{MaxConcurrency: intp(5)}
			if err := exec.SetGroupOverride("t", override); !errors.Is(err, ErrCoordinated) {
				t.Fatalf("before it stops: got %v, want ErrCoordinated", err)
			}
			tc.stop(t, c)
			if err := exec.SetGroupOverride("t", override); err != nil {
				t.Errorf("once it stopped: got %v, want the override taken", err)
			}
		})
	}
}

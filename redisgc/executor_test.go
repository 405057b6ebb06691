package redisgc

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/kobe/groupconc"
)

func TestNewRefusesWhatItCannotUseNamingIt(t *testing.T) {
	s := startRedis(t)
	exec := groupconc.New(nil)
	defer exec.Close()
	bad := func() *groupconc.PolicyBuilder { return groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(0) }
	closed := groupconc.New(nil)
	closed.Close()
	for _, tc := range []struct {
		name, want string // want: what the error names
		err        error
	}{
		{"closed executor", "executor", func() error { _, err := New(s.client(t), closed, Options{}); return err }()},
		{"nil client", "nil client", func() error { _, err := New(nil, exec, Options{}); return err }()},
		{"nil executor", "nil executor", func() error { _, err := New(s.client(t), nil, Options{}); return err }()},
		{"options", "DefaultLimit", func() error { _, err := New(s.client(t), exec, Options{DefaultLimit: -1}); return err }()},
		{"base", "base policy", func() error { _, err := New(s.client(t), exec, Options{Base: bad}); return err }()},
	} {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), "redisgc: ") || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a redisgc error naming %q", tc.name, tc.err, tc.want)
		}
	}
}

func TestNewLimitsCoordinatedGroupsToOneUntilTheReplicaHasAShare(t *testing.T) {
	s := startRedis(t)
	exec := groupconc.New(nil)
	defer exec.Close()
	gate := make(chan struct{})
	for _, g := range []string{"t", "other"} {
		for range 3 {
			_, err := groupconc.Submit(context.Background(), exec, g, "x", func(context.Context) (int, error) {
				<-gate
				return 0, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	defer close(gate)
	c, err := New(s.client(t), exec, Options{
		Limits:   map[string]int{"t": 10},
		LeaseTTL: 300 * time.Millisecond,
		Base:     func() *groupconc.PolicyBuilder { return groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(5) },
	})
	if err != nil {
		t.Fatal(err)
	}
	for g, want := range map[string]int{"t": 1, "other": 5} {
		if gs, _ := exec.GroupStats(g); gs.MaxConcurrency != want {
			t.Errorf("%s before Run: limit %d, want %d", g, gs.MaxConcurrency, want)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Run(context.Background()) }()
	eventually(t, 5*time.Second, func() bool { gs, _ := exec.GroupStats("t"); return gs.MaxConcurrency == 3 },
		"the coordinated group never got the share its 3 tasks want")
	if err := c.Run(context.Background()); err == nil {
		t.Error("a second Run: got nil, want an error")
	}
	_ = c.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: got %v, want ErrClosed", err)
	}
}

// An idle replica applies no limits, so it never met the executor's
// refusal: Run went on renewing its lease for a closed executor, holding
// 1 of every fleet limit. It returns the executor's error now, busy or
// idle.
func TestRunReturnsOnceTheExecutorIsClosedEvenIdle(t *testing.T) {
	s := startRedis(t)
	exec := groupconc.New(nil)
	c, err := New(s.client(t), exec, Options{Limits: map[string]int{"t": 6}, LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errc := make(chan error, 1)
	go func() { errc <- c.Run(context.Background()) }()
	eventually(t, 10*time.Second, func() bool { return c.Status().Mode == ModeConnected }, "never joined")
	_ = exec.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, groupconc.ErrClosed) || !strings.HasPrefix(err.Error(), "redisgc: executor: ") {
			t.Errorf("Run returned %v, want the executor's ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return after the executor closed: %+v", c.Status())
	}
}

// TestTheExecutorsLoadsNameEveryGroup: a replica reads the load of each
// group its executor runs, not of the first alone.
func TestTheExecutorsLoadsNameEveryGroup(t *testing.T) {
	exec := groupconc.New(nil)
	gate := make(chan struct{})
	t.Cleanup(func() {
		close(gate)
		_ = exec.Shutdown(context.Background())
	})
	for i, g := range []string{"x", "y", "z"} {
		submitGated(t, exec, g, i+1, gate)
	}
	got := map[string]load{}
	for g, l := range (&execTarget{exec: exec}).groups {
		got[g] = l
	}
	want := map[string]load{"x": {running: 1}, "y": {running: 1, waiting: 1}, "z": {running: 1, waiting: 2}} // each at the default limit, 1
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

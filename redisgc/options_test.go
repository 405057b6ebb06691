package redisgc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kobe/groupconc"
)

func TestOptionsAreCheckedNamingEveryBadField(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		bad  []string // each must appear in the error; none: valid
	}{
		{"zero", Options{}, nil},
		{"least values", Options{Limits: map[string]int{"a": 1}, LeaseTTL: 100 * time.Millisecond}, nil},
		{"bad limits", Options{Limits: map[string]int{"a": 0}, DefaultLimit: -1, GlobalLimit: -1},
			[]string{`Limits["a"] = 0`, "DefaultLimit", "GlobalLimit"}},
		{"short lease", Options{LeaseTTL: time.Millisecond}, []string{"LeaseTTL < 100ms"}},
		{"slow renewal", Options{LeaseTTL: time.Second, RenewInterval: 600 * time.Millisecond},
			[]string{"RenewInterval >= LeaseTTL/2"}},
		{"renewal at half the lease", Options{LeaseTTL: time.Second, RenewInterval: 500 * time.Millisecond},
			[]string{"RenewInterval >= LeaseTTL/2"}},
		{"negative", Options{ExpectedReplicas: -1, SyncInterval: -1}, []string{"ExpectedReplicas", "negative interval"}},
		{"negative lease", Options{LeaseTTL: -1}, []string{"negative interval"}},
		{"negative renewal", Options{RenewInterval: -1}, []string{"negative interval"}},
		{"a brace in the prefix", Options{Prefix: "}fleet"}, []string{`Prefix "}fleet"`}},
		{"a brace inside the prefix", Options{Prefix: "a}b"}, []string{`Prefix "a}b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.o.withDefaults()
			if len(tc.bad) == 0 {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, errOptions) {
				t.Fatalf("got %v, want an options error", err)
			}
			for _, b := range tc.bad {
				if !strings.Contains(err.Error(), b) {
					t.Errorf("got %q, want it to name %q", err, b)
				}
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.LeaseTTL != 10*time.Second || o.RenewInterval != o.LeaseTTL/3 || o.SyncInterval != 100*time.Millisecond || o.Prefix != "groupconc" {
		t.Fatalf("got %+v", o)
	}
	slow, err := Options{RenewInterval: time.Second, SyncInterval: time.Hour}.withDefaults()
	if err != nil || slow.SyncInterval != time.Second {
		t.Errorf("SyncInterval above RenewInterval: got %v (%v), want RenewInterval", slow.SyncInterval, err)
	}
	if got := o.fallback(12, 12); got != 12 {
		t.Errorf("fallback without ExpectedReplicas: got %d, want the share held, 12", got)
	}
	o.ExpectedReplicas = 5
	for _, c := range [][3]int{{12, 12, 2}, {12, 1, 1}, {3, 3, 1}} {
		if got := o.fallback(c[0], c[1]); got != c[2] {
			t.Errorf("fallback(limit %d, held %d): got %d, want %d", c[0], c[1], got, c[2])
		}
	}
}

func TestPoliciesKeepTheBaseForGroupsOutsideTheFleet(t *testing.T) {
	o, err := Options{
		Limits:      map[string]int{"t": 10},
		GlobalLimit: 20,
		Base: func() *groupconc.PolicyBuilder {
			return groupconc.NewPolicyBuilder().
				PerGroupMaxConcurrency(map[string]int{"t": 7, "free": 3}).
				DefaultMaxConcurrencyPerGroup(2)
		},
	}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m, err := newPolicyMaker(&o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.policy(map[string]int{"t": 4}, 6)
	if err != nil {
		t.Fatal(err)
	}
	for g, want := range map[string]int{"t": 4, "free": 3, "other": 2} {
		if got := p.ResolveConcurrency(g); got != want {
			t.Errorf("%s: got %d, want %d", g, got, want)
		}
	}
	if got := p.GlobalMaxInFlight(); got != 6 {
		t.Errorf("global: got %d, want 6", got)
	}
	if p, _ = m.policy(nil, 1); p.ResolveConcurrency("t") != 1 {
		t.Errorf("a coordinated group without a share: got %d, want 1", p.ResolveConcurrency("t"))
	}
	o.Base = func() *groupconc.PolicyBuilder { return groupconc.NewPolicyBuilder().GlobalMaxInFlight(0) }
	if _, err := newPolicyMaker(&o); err == nil || !strings.HasPrefix(err.Error(), "redisgc: ") {
		t.Errorf("a base that does not build: got %v", err)
	}
}

func TestModeNames(t *testing.T) {
	for m, s := range map[Mode]string{ModeJoining: "joining", ModeConnected: "connected", ModeHolding: "holding",
		ModeFallback: "fallback", ModeStopped: "stopped", Mode(42): "unknown"} {
		if m.String() != s {
			t.Errorf("%d: got %q, want %q", int(m), m, s)
		}
	}
}

func (o Options) withDefaultsOrDie(t *testing.T) Options {
	t.Helper()
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// A nil *redis.Client is a nil client, though it is not a nil interface.
// The refused New leaves no guard on the executor's overrides.
func TestNewRefusesANilClient(t *testing.T) {
	exec := groupconc.New(nil)
	t.Cleanup(func() { _ = exec.Close() })
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) }) // before Close
	submitGated(t, exec, "t", 1, gate)
	opts := Options{Limits: map[string]int{"t": 4}}
	for name, client := range map[string]redis.Scripter{"nil": nil, "nil *redis.Client": (*redis.Client)(nil)} {
		if _, err := New(client, exec, opts); err == nil || !strings.Contains(err.Error(), "nil client") {
			t.Errorf("%s: got %v, want an error naming the nil client", name, err)
		}
		if err := exec.SetGroupOverride("t", groupconc.GroupOverride{MaxConcurrency: intp(2)}); err != nil {
			t.Errorf("%s: the refused New left its guard behind: %v", name, err)
		}
		_ = exec.SetGroupOverride("t", groupconc.GroupOverride{})
	}
}

// panicky is a client whose every call panics.
type panicky struct{ redis.Scripter }

// A client that panics fails its call, as an error would: the replica
// holds and falls back, and the process goes on.
func TestAClientThatPanicsFailsItsCall(t *testing.T) {
	exec := groupconc.New(nil)
	t.Cleanup(func() { _ = exec.Close() })
	c, err := New(panicky{}, exec, Options{Limits: map[string]int{"t": 4}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	eventually(t, 10*time.Second, func() bool { return c.Status().Err != nil }, "no sync error")
	if err := c.Status().Err; !strings.Contains(err.Error(), "panicked") {
		t.Errorf("got %v, want it to say the client panicked", err)
	}
	cancel()
	<-done
	c.Close()
}

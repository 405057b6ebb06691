package redisgc

import (
	"strings"
	"testing"

	"github.com/kobe/groupconc"
)

// panickyBase returns options whose Base panics once *panics is set, and a
// policy maker made from them before.
func panickyBase(t *testing.T) (*Options, *policyMaker, *bool) {
	t.Helper()
	panics := new(bool)
	o := &Options{Limits: map[string]int{"a": 4}, Base: func() *groupconc.PolicyBuilder {
		if *panics {
			panic("boom")
		}
		return groupconc.NewPolicyBuilder()
	}}
	m, err := newPolicyMaker(o)
	if err != nil {
		t.Fatal(err)
	}
	return o, m, panics
}

// A Base that panics is an error, as one whose builder does not build
// is: when the Coordinator is made, and when it builds a policy later.
func TestABasePanicIsAnError(t *testing.T) {
	o, m, panics := panickyBase(t)
	*panics = true
	if _, err := m.policy(map[string]int{"a": 2}, 0); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("policy with a Base that panics: %v", err)
	}
	if _, err := newPolicyMaker(o); err == nil || !strings.Contains(err.Error(), "Options.Base") {
		t.Errorf("newPolicyMaker with a Base that panics: %v", err)
	}
}

// A Base that panics when a sync applies limits leaves the executor's
// policy as it was: apply returns the error, and sets no policy.
func TestABasePanicAtApplyKeepsThePolicyInForce(t *testing.T) {
	_, m, panics := panickyBase(t)
	exec := groupconc.New(nil)
	t.Cleanup(func() { _ = exec.Close() })
	target := &execTarget{exec: exec, policies: m}
	if err := target.apply(map[string]int{"a": 3}, 0); err != nil {
		t.Fatal(err)
	}
	before := exec.Policy()
	*panics = true
	if err := target.apply(map[string]int{"a": 2}, 0); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("apply with a Base that panics: got %v, want its panic", err)
	}
	if exec.Policy() != before || exec.Policy().ResolveConcurrency("a") != 3 {
		t.Errorf("apply with a Base that panics changed the policy: a runs %d, want 3", exec.Policy().ResolveConcurrency("a"))
	}
}

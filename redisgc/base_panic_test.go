package redisgc

import (
	"strings"
	"testing"

	"github.com/kobe/groupconc"
)

// A Base that panics is an error, as one whose builder does not build
// is: when the Coordinator is made, and when it builds a policy later.
func TestABasePanicIsAnError(t *testing.T) {
	panics := false
	o := &Options{Limits: map[string]int{"a": 4}, Base: func() *groupconc.PolicyBuilder {
		if panics {
			panic("boom")
		}
		return groupconc.NewPolicyBuilder()
	}}
	m, err := newPolicyMaker(o)
	if err != nil {
		t.Fatal(err)
	}
	panics = true
	if _, err := m.policy(map[string]int{"a": 2}, 0); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("policy with a Base that panics: %v", err)
	}
	if _, err := newPolicyMaker(o); err == nil || !strings.Contains(err.Error(), "Options.Base") {
		t.Errorf("newPolicyMaker with a Base that panics: %v", err)
	}
}

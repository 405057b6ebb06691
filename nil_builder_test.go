package groupconc_test

// A nil PolicyBuilder: no call panics, and Build says what is wrong.

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestANilPolicyBuilderBuildsNoPolicyAndSaysWhy: its setters return nil, so
// a chain ends at Build, which names the problem. It never builds the
// default policy in silence.
func TestANilPolicyBuilderBuildsNoPolicyAndSaysWhy(t *testing.T) {
	var b *groupconc.PolicyBuilder
	require.NotPanics(t, func() {
		p, err := b.GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(2).Build()
		assert.Nil(t, p)
		assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
		assert.Contains(t, err.Error(), "nil PolicyBuilder")
	})

	// ParsePolicy returns a nil builder with its error. A caller that drops
	// the error learns at Build.
	parsed, err := groupconc.ParsePolicy([]byte(`{"globalMaxInFlight": -1}`))
	require.Error(t, err)
	require.NotPanics(t, func() {
		p, err := parsed.PressureWarningFunc(func(groupconc.PressureWarning) {}).Build()
		assert.Nil(t, p)
		assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	})
}

// TestEverySetterOfANilPolicyBuilderReturnsNil calls each exported method,
// so a setter added later is covered too.
func TestEverySetterOfANilPolicyBuilderReturnsNil(t *testing.T) {
	v := reflect.ValueOf((*groupconc.PolicyBuilder)(nil))
	builder := v.Type()
	for i := range v.NumMethod() {
		name := builder.Method(i).Name
		m := v.Method(i)
		args := make([]reflect.Value, m.Type().NumIn())
		for j := range args {
			args[j] = reflect.Zero(m.Type().In(j))
		}
		var out []reflect.Value
		require.NotPanics(t, func() { out = m.Call(args) }, "(*PolicyBuilder)(nil).%s", name)
		switch {
		case len(out) == 1 && out[0].Type() == builder:
			assert.True(t, out[0].IsNil(), "%s returned a builder", name)
		case name == "Build":
			assert.True(t, out[0].IsNil(), "Build returned a policy")
			assert.ErrorIs(t, out[1].Interface().(error), groupconc.ErrInvalidPolicy, "Build")
		default:
			t.Errorf("%s: a method this test does not know", name)
		}
	}
}

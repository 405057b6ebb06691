package groupconc_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

func TestBuildRefusesParentsItWouldNotEnforce(t *testing.T) {
	for name, b := range map[string]*groupconc.PolicyBuilder{
		"separator": builder().ParentSeparator("/"),
		"resolver":  builder().ParentResolver(func(string) string { return "t" }),
	} {
		p, err := b.Build()
		assert.Nil(t, p, name)
		assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy, name)
		assert.ErrorContains(t, err, "ParentResolver and ParentSeparator", name)
	}
	_, err := builder().ParentSeparator("").Build()
	assert.ErrorContains(t, err, "ParentSeparator is empty")
	_, err = builder().ParentResolver(func(string) string { return "" }).ParentSeparator("").Build()
	assert.ErrorContains(t, err, "ParentSeparator is empty", "whether or not a resolver is set")

	p := mustBuild(t, builder())
	assert.Empty(t, p.ResolveParent("a/b"))
	assert.Nil(t, p.Explain("a/b").Ancestors)
}

// A policy with parents is refused in this release, naming the settings,
// rather than built with limits it would not enforce.
func ExamplePolicyBuilder_ParentSeparator() {
	_, err := groupconc.NewPolicyBuilder().ParentSeparator("/").Build()
	fmt.Println(errors.Is(err, groupconc.ErrInvalidPolicy))
	// Output: true
}

// ParentResolver is refused by Build in this release, like ParentSeparator.
func ExamplePolicyBuilder_ParentResolver() {
	tenantOf := func(user string) string { return "acme" }
	_, err := groupconc.NewPolicyBuilder().ParentResolver(tenantOf).Build()
	fmt.Println(errors.Is(err, groupconc.ErrInvalidPolicy))
	// Output: true
}

// ResolveParent names a group's parent; with parents refused by Build in
// this release, every group is at the top.
func ExampleGroupPolicy_ResolveParent() {
	p := groupconc.DefaultPolicy()
	fmt.Printf("%q\n", p.ResolveParent("acme/alice"))
	// Output: ""
}

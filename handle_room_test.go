package groupconc

import "testing"

// A task is made with room for an Ext only if it may need one: a cost above
// one, or a policy with parents. A task of cost 0 or 1 under a flat policy
// is a plain handle, as before costs and parents existed.
func TestOnlyACostAboveOneOrParentsMakeRoomForAnExt(t *testing.T) {
	flat := New(DefaultPolicy())
	defer flat.Close()
	tree, err := NewPolicyBuilder().ParentSeparator("/").Build()
	if err != nil {
		t.Fatal(err)
	}
	parents := New(tree)
	defer parents.Close()
	for _, c := range []struct {
		e    *GroupExecutor
		cost int
		want bool
	}{{flat, 0, false}, {flat, 1, false}, {flat, 2, true}, {parents, 0, true}, {parents, 1, true}} {
		if got := c.e.withExt(c.cost); got != c.want {
			t.Errorf("withExt(%d), parents %v: %v, want %v", c.cost, c.e == parents, got, c.want)
		}
	}
}

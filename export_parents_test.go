package groupconc

// ParentChain is parentChain, the chain the executor resolves for a new
// group, for the tests of package groupconc_test.
func (p *GroupPolicy) ParentChain(groupKey string) ([]string, error) {
	return p.parentChain(groupKey, nil)
}

// MaxAncestors is maxAncestors, for the same tests.
const MaxAncestors = maxAncestors

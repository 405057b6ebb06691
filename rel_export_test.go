package groupconc

// Test accessors for the reliability suite (reliability_test.go,
// fuzz_test.go), next to export_test.go's Quiescent.

// RelGroupProbe returns a probe of groupKey's current group state, or false
// if the group does not exist. The probe keeps that state: called after
// EvictGroup, it still checks the old group, which the registry has
// forgotten but the old group's tasks release into (DESIGN "Groups"). Like
// Quiescent, call the probe only once the group's tasks have all finished.
func (e *GroupExecutor) RelGroupProbe(groupKey string) (probe func() error, ok bool) {
	g, ok := e.groups.Lookup(groupKey)
	if !ok {
		return nil, false
	}
	return func() error { return quietGroup(g) }, true
}

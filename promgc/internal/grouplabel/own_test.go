package grouplabel

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// A child whose parent the snapshot left out gives its counts back to its
// nearest ancestor read, each task counted once. Own asks parentOf once
// per group left out, however many children it has: parentOf is a call
// into the executor.
func TestOwnClimbsToTheNearestAncestorReadAskingOncePerGroup(t *testing.T) {
	const kids = 100
	gs := []groupconc.GroupStats{{GroupKey: "t", Running: 1, Succeeded: kids + 1}}
	for i := range kids {
		gs = append(gs, groupconc.GroupStats{GroupKey: fmt.Sprintf("t/m/u%d", i), Parent: "t/m", Succeeded: 1})
	}
	asked := map[string]int{}
	own := Own(slices.Values(gs), func(key string) string {
		asked[key]++
		return map[string]string{"t/m": "t"}[key]
	})
	assert.Equal(t, map[string]int{"t/m": 1}, asked)
	var ended uint64
	for _, g := range own {
		ended += g.Succeeded
	}
	assert.Equal(t, uint64(kids+1), ended, "ended tasks over the groups")
	assert.Equal(t, uint64(1), own[0].Succeeded, "t's own: its own task and t/m's, none of its grandchildren's")
	assert.Equal(t, 1, own[0].Running)
}

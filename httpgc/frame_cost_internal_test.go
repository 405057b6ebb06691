package httpgc

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// A frame costs what is active. A paused user under an idle tenant is
// active and shown, and the tenant is not, so the frame looks the tenant
// up to draw the user under it. GroupStats of a parent once read every
// active group. An odd Rows leaves a list of pairs short, so every user
// was taken and every tenant looked up: a frame of 4 000 paused users cost
// 14 s. With 4 times as many, a frame must allocate less than 8 times as
// much.
func TestAFrameOfPausedUsersUnderIdleTenantsCostsWhatIsActive(t *testing.T) {
	per := map[int]uint64{}
	for _, n := range []int{100, 400} {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().ParentSeparator("/"))
		paused, resumed := true, false
		for i := range n {
			key := fmt.Sprintf("t%d/u", i)
			adaptertest.Submit(t, e, key, adaptertest.OK).Wait()
			require.NoError(t, e.SetGroupOverride(key, groupconc.GroupOverride{Paused: &paused}))
			t.Cleanup(func() { _ = e.SetGroupOverride(key, groupconc.GroupOverride{Paused: &resumed}) })
		}
		h, err := New(e, Options{Rows: 5, History: -1})
		require.NoError(t, err)
		_, rows := h.groups(e.ActiveGroupStats(), byOldestWait, h.o.Rows, "")
		require.Len(t, rows, 4, "two users, each under its tenant")
		per[n] = adaptertest.Allocated(func() { h.publish() })
		h.Close()
	}
	assert.Less(t, per[400], 8*per[100], "bytes a frame allocates with 400 paused users, against 100 (%v)", per)
}

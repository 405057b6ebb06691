package httpgc_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc/httpgc"
)

// A slow snapshot makes the producer wait nine times as long as it took. The
// snapshot says so (nextMs), so the page does not take the wait for a dead
// stream and poll. The DisplayKey's sleep, in fake time, is the slowness.
func TestASlowSnapshotSaysWhenTheNextComes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{Interval: 100 * time.Millisecond,
			DisplayKey: func(key string) string { time.Sleep(20 * time.Millisecond); return key }})
		start := time.Now()
		c := watch(f.h, nil)
		defer c.leave()
		for len(c.ids()) == 0 {
			time.Sleep(time.Millisecond)
		}
		first := time.Now()
		took := first.Sub(start)
		evs, _ := c.rec.events()
		var snap struct{ NextMs int64 }
		require.NoError(t, json.Unmarshal([]byte(evs[0].data), &snap))
		next := time.Duration(snap.NextMs) * time.Millisecond
		require.Greater(t, took, 50*time.Millisecond, "DisplayKey made the snapshot slow")
		assert.GreaterOrEqual(t, next, 9*(took-time.Millisecond), "nextMs is the producer's wait (took is seen within 1ms)")

		time.Sleep(next - 2*time.Millisecond)
		assert.Len(t, c.ids(), 1, "no snapshot before nextMs")
		for len(c.ids()) == 1 {
			time.Sleep(time.Millisecond)
		}
		gap := time.Since(first)
		assert.LessOrEqual(t, gap, next+2*took, "the next snapshot comes when said, plus its own build")
	})
}

// With a DisplayKey, a read of a name two groups share answers 409 whether
// or not a stream is open: the stream's names do not pick one of them.
func TestANameTwoGroupsShareAnswers409WithAStreamOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{DisplayKey: func(key string) string {
			if key == "c" {
				return "c"
			}
			return "same"
		}})
		before := get(f.h, "/api/group/explain?group=same").Code
		c := watch(f.h, nil)
		defer c.leave()
		synctest.Wait()
		require.Len(t, c.ids(), 1)
		assert.Equal(t, http.StatusConflict, before)
		assert.Equal(t, http.StatusConflict, get(f.h, "/api/group/explain?group=same").Code)
		assert.Equal(t, http.StatusConflict, get(f.h, "/api/groups/same").Code)
		assert.Equal(t, http.StatusOK, get(f.h, "/api/groups/c").Code, "a name of one group is still read")
	})
}

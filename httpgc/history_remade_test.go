package httpgc_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// A group forgotten as idle and made again between two samples starts its
// counters at 0. Its row's "recent" counts the new group's tasks, not
// those less the old group's count. Once it took the old group's last
// sample as its base: 6 tasks of the new group showed as 3.
func TestARowsRecentCountsAGroupMadeAgainBetweenSamples(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(65*time.Second).DefaultMaxConcurrencyPerGroup(8))
		h, err := httpgc.New(e, httpgc.Options{Interval: 10 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		// Samples at 0s, 10s, 20s… The sampler looks for idle groups at
		// 70s, and then a Submit does at 135.5s, before the sample at 140s.
		time.Sleep(time.Second) // fake clock
		gate := adaptertest.NewGate(t)
		held := adaptertest.Submit(t, e, "g", gate.Task)
		for range 2 {
			adaptertest.Submit(t, e, "g", adaptertest.OK).Wait()
		}
		time.Sleep(10 * time.Second) // g shown by the sample at 10s
		gate.Release()
		held.Wait()
		time.Sleep(124*time.Second + 500*time.Millisecond)
		adaptertest.Submit(t, e, "g", adaptertest.OK).Wait() // forgets g and makes it again
		time.Sleep(5 * time.Second)                          // sampled at 140s
		for range 5 {
			adaptertest.Submit(t, e, "g", adaptertest.OK).Wait()
		}
		w := get(h, "/api/groups/g")
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		recent, _ := object(t, w)["recent"].(map[string]any)
		require.NotNil(t, recent, w.Body.String())
		assert.Equal(t, 6.0, recent["succeeded"], "the new group's tasks: %s", w.Body)
	})
}

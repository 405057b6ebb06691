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

// A PATCH is SetGroupOverride, so it uses the group: a group idle for
// more than the TTL, patched before a sweep came, stays for the TTL from
// the PATCH with its override. Once the next sweep forgot both, just after
// the PATCH answered with the new row. A GET of the group does not count.
func TestAPatchRestartsTheGroupsIdleTime(t *testing.T) {
	for _, body := range []string{`{"maxConcurrency":3}`, `{"maxConcurrency":null}`} {
		t.Run(body, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(time.Minute))
				h, err := httpgc.New(e, httpgc.Options{AllowWrites: true, Authorize: allowAll})
				require.NoError(t, err)
				t.Cleanup(func() { h.Close() })
				// The handler's history reads the stats each second, so
				// the executor looks for idle groups at 60s, 120s, 180s.
				time.Sleep(30 * time.Second) // fake clock
				adaptertest.Submit(t, e, "g", adaptertest.OK).Wait()
				time.Sleep(80 * time.Second) // g idle for 80s, kept at 60s
				w := patch(h, "/api/groups/g", body)
				require.Equal(t, http.StatusOK, w.Code, w.Body.String())
				time.Sleep(11 * time.Second)
				w = get(h, "/api/groups/g") // looked for at 120s
				assert.Equal(t, http.StatusOK, w.Code, "g 11s after the PATCH: %s", w.Body)
				time.Sleep(2 * time.Minute)
				w = get(h, "/api/groups/g")
				assert.Equal(t, http.StatusNotFound, w.Code, "g idle for 2×TTL after the PATCH: %s", w.Body)
			})
		})
	}
}

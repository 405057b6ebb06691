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

func TestTheHandlerListsTheExecutorsWarningsFromNewUntilClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().
			PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Second, Cooldown: time.Second}, nil)) // no function
		gate := adaptertest.NewGate(t)
		h, err := httpgc.New(e, httpgc.Options{})
		require.NoError(t, err)
		adaptertest.Submit(t, e, "a", gate.Task)
		adaptertest.Submit(t, e, "a", gate.Task) // waits
		time.Sleep(time.Second)
		synctest.Wait()
		warnings := func() []any {
			w := get(h, "/api/warnings")
			require.Equal(t, http.StatusOK, w.Code)
			return object(t, w)["warnings"].([]any)
		}
		list := warnings()
		require.Len(t, list, 1, "the age warning, told to the handler by New's watch")
		assert.Equal(t, "a", list[0].(map[string]any)["group"])
		assert.Equal(t, "backlog-age", list[0].(map[string]any)["trigger"])

		require.NoError(t, h.Close())
		time.Sleep(2 * time.Second) // past the cooldown: the group is warned about again
		synctest.Wait()
		assert.Len(t, warnings(), 1, "no warning recorded after Close")
		gate.Release()
	})
}

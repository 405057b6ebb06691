package httpgc_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// A 422 names each bad value as the request named it: by its JSON field,
// with the value sent.
func TestAWeightWithoutFairShareGets422NamingTheField(t *testing.T) {
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		t.Run(mode.String(), func(t *testing.T) {
			e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode))
			gate := adaptertest.NewGate(t)
			adaptertest.Submit(t, e, "a", gate.Task)
			gate.WaitStarted(1)
			h, err := httpgc.New(e, httpgc.Options{AllowWrites: true, Authorize: allowAll})
			require.NoError(t, err)
			t.Cleanup(func() { h.Close() })

			w := patch(h, "/api/groups/a", `{"maxConcurrency":3,"weight":2}`)
			st, _ := e.GroupStats("a")
			if mode == groupconc.IsolationFairShare {
				require.Equal(t, http.StatusOK, w.Code, w.Body.String())
				assert.Equal(t, 2, st.Weight)
				return
			}
			require.Equal(t, http.StatusUnprocessableEntity, w.Code, w.Body.String())
			msg := object(t, w)["error"].(string)
			assert.Contains(t, msg, "weight", "the field as the request named it")
			assert.Contains(t, msg, `"2"`, "the value sent")
			assert.Equal(t, 1, st.MaxConcurrency, "nothing changed")
			_, overridden := e.GroupOverride("a")
			assert.False(t, overridden, "nothing changed")
		})
	}
}

func TestALimitAGuardRefusesGets422NamingTheField(t *testing.T) {
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())
	remove, err := e.GuardOverrides(func(_ string, o groupconc.GroupOverride) error {
		if o.MaxInFlight != nil && *o.MaxInFlight > 5 {
			return fmt.Errorf("%w: MaxInFlight is %d, want at most 5", groupconc.ErrInvalidPolicy, *o.MaxInFlight)
		}
		return nil
	})
	require.NoError(t, err)
	t.Cleanup(remove)
	adaptertest.Submit(t, e, "a", adaptertest.OK).Wait()
	h, err := httpgc.New(e, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })

	w := patch(h, "/api/groups/a", `{"maxConcurrency":2,"maxInFlight":9}`)
	require.Equal(t, http.StatusUnprocessableEntity, w.Code, w.Body.String())
	msg := object(t, w)["error"].(string)
	assert.Contains(t, msg, "maxInFlight", "the field as the request named it")
	assert.Contains(t, msg, `"9"`, "the value sent")
	assert.NotContains(t, msg, "maxConcurrency", "only the refused field is named")
	st, _ := e.GroupStats("a")
	assert.Equal(t, 1, st.MaxConcurrency, "nothing changed")
}

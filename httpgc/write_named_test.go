package httpgc_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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

// Under a DisplayKey, a refusal that names the group's key, as a guard's
// may, shows the displayed name there instead. That holds for the key
// quoted whole, quoted and cut short, or as it is.
func TestARefusalThatNamesTheKeyShowsTheDisplayedNameInstead(t *testing.T) {
	short := "user:alice@example.com"
	long := "tenant/alice@example.com/" + strings.Repeat("x", 300)
	for _, c := range []struct {
		key, form string
		code      int
	}{
		{short, "quoted", http.StatusConflict},
		{short, "as-is", http.StatusConflict},
		{short, "invalid", http.StatusUnprocessableEntity},
		{long, "quoted", http.StatusConflict},
		{long, "cut", http.StatusConflict},
	} {
		t.Run(c.form+"/"+strconv.Itoa(len(c.key)), func(t *testing.T) {
			e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())
			remove, err := e.GuardOverrides(func(g string, _ groupconc.GroupOverride) error {
				switch c.form {
				case "as-is":
					return fmt.Errorf("group %s runs at most 4 tasks across the fleet", g)
				case "invalid":
					return fmt.Errorf("%w: group %q: MaxConcurrency above 4", groupconc.ErrInvalidPolicy, g)
				case "cut":
					return fmt.Errorf("group %s... (%d bytes) runs at most 4 tasks", strconv.Quote(g[:40]), len(g))
				}
				return fmt.Errorf("group %q runs at most 4 tasks across the fleet", g)
			})
			require.NoError(t, err)
			t.Cleanup(remove)
			adaptertest.Submit(t, e, c.key, adaptertest.OK).Wait()
			hk := httpgc.HashKey([]byte("secret"))
			h, err := httpgc.New(e, httpgc.Options{AllowWrites: true, Authorize: allowAll, DisplayKey: hk})
			require.NoError(t, err)
			t.Cleanup(func() { h.Close() })

			w := patch(h, "/api/groups/"+hk(c.key), `{"maxConcurrency":9}`)
			require.Equal(t, c.code, w.Code, w.Body.String())
			assert.NotContains(t, w.Body.String(), "alice", "the key")
			assert.Contains(t, w.Body.String(), hk(c.key), "the name the page shows")
		})
	}
}

// A refusal that repeats a key as it is, as a guard's may, shows its
// invisible and bidi characters escaped as strconv.Quote writes them.
func TestARefusalShowsAKeysInvisibleCharactersEscaped(t *testing.T) {
	key := "acme\u200b\u202e x"
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())
	remove, err := e.GuardOverrides(func(g string, _ groupconc.GroupOverride) error {
		return fmt.Errorf("group %s runs at most 4 tasks\tacross the fleet", g)
	})
	require.NoError(t, err)
	t.Cleanup(remove)
	adaptertest.Submit(t, e, key, adaptertest.OK).Wait()
	h, err := httpgc.New(e, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })

	w := patch(h, "/api/group?group="+url.QueryEscape(key), `{"maxConcurrency":9}`)
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
	assert.Equal(t, `group acme\u200b\u202e x runs at most 4 tasks\tacross the fleet`, object(t, w)["error"])
}

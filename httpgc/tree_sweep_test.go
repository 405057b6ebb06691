package httpgc_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// underZ is an executor whose groups "a1" to "a<children>" are children of
// "z", each with a task held running, and a handler for it. By key, z
// comes after all its children.
func underZ(t *testing.T, children int) *httpgc.Handler {
	t.Helper()
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(16).GlobalMaxInFlight(64).ParentResolver(func(k string) string {
		if strings.HasPrefix(k, "a") {
			return "z"
		}
		return ""
	}))
	g := adaptertest.NewGate(t)
	for i := 1; i <= children; i++ {
		adaptertest.Submit(t, e, fmt.Sprintf("a%d", i), g.Task)
	}
	g.WaitStarted(children)
	h, err := httpgc.New(e, httpgc.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return h
}

// In a list of one, no child fits with its parent. Eight children, as
// many as a chain of ancestors can be deep, come before their parent by
// key, and the parent still takes the place they leave.
func TestAParentAfterAsManyChildrenAsAChainIsDeepStillFillsAListOfOne(t *testing.T) {
	h := underZ(t, 8)
	w := get(h, "/api/groups?sort=key&limit=1")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body := object(t, w)
	assert.Equal(t, []string{"z"}, groupNames(t, body))
	assert.Equal(t, 9.0, body["total"])
}

// A group as deep as the executor allows, eight ancestors, is listed with
// every one of them, the topmost included.
func TestAGroupAtTheDeepestIsListedWithAllItsAncestors(t *testing.T) {
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().ParentSeparator("/"))
	g := adaptertest.NewGate(t)
	var chain []string
	key := ""
	for i := 1; i <= 9; i++ {
		key += fmt.Sprintf("/l%d", i)
		chain = append(chain, key[1:])
	}
	adaptertest.Submit(t, e, chain[8], g.Task)
	g.WaitStarted(1)
	h, err := httpgc.New(e, httpgc.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	w := get(h, "/api/groups?sort=key&prefix="+chain[8])
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body := object(t, w)
	assert.Equal(t, chain, groupNames(t, body))
	assert.Equal(t, 1.0, body["total"])
}

// A group whose grandparent is paused, its parent not, names the
// grandparent as the one to resume.
func TestAGroupUnderAPausedGrandparentNamesTheGrandparent(t *testing.T) {
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().ParentSeparator("/"))
	adaptertest.Submit(t, e, "g/p/c", adaptertest.OK).Wait()
	h := handlerFor(t, e)
	require.Equal(t, http.StatusOK, patch(h, "/api/groups/g", `{"paused":true}`).Code)
	task := adaptertest.Submit(t, e, "g/p/c", adaptertest.OK)
	row := rowOf(t, h, "g/p/c")
	assert.Equal(t, "paused", row["why"])
	assert.Equal(t, "g", row["pausedBy"])
	assert.Equal(t, "g", rowOf(t, h, "g/p")["pausedBy"])

	require.Equal(t, http.StatusOK, patch(h, "/api/groups/g", `{"paused":null}`).Code)
	assert.Equal(t, groupconc.StatusSuccess, task.Wait().Status)
}

// More children come before their parent than a chain of ancestors can be
// deep, and none fits in a list of one: the parent still fills it.
func TestAParentAfterManyChildrenStillFillsAListOfOne(t *testing.T) {
	for _, children := range []int{9, 16} {
		h := underZ(t, children)
		w := get(h, "/api/groups?sort=key&limit=1")
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		body := object(t, w)
		assert.Equal(t, []string{"z"}, groupNames(t, body), "%d children: %s", children, w.Body)
		assert.Equal(t, float64(children+1), body["total"])
	}
}

package httpgc

import (
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/kobe/groupconc"
)

// groupsJSON is the body of GET api/groups.
type groupsJSON struct {
	Total  int   `json:"total"` // groups matching the prefix
	Groups []row `json:"groups"`
}

// explainJSON is the body of GET api/groups/{group}/explain. Per limit, it
// gives the value in force, what decided it, and every setting that would
// decide it, deciding one first. It also gives the group's overrides, in the
// shape a PATCH takes. A weight is a plain number, as a PATCH takes it,
// never "unlimited".
type explainJSON struct {
	Group          string             `json:"group"`
	MaxConcurrency explanation[limit] `json:"maxConcurrency"`
	MaxInFlight    explanation[limit] `json:"maxInFlight"`
	QueueThreshold explanation[limit] `json:"queueThreshold"`
	Weight         explanation[int]   `json:"weight"`
	Override       overrideJSON       `json:"override"`
}

type explanation[V ~int] struct {
	Value  V                     `json:"value"`
	Source groupconc.LimitSource `json:"source"`
	Stack  []choice[V]           `json:"stack"`
}

type choice[V ~int] struct {
	Source groupconc.LimitSource `json:"source"`
	Value  V                     `json:"value"`
}

// overrideJSON is a group's overrides, with null where there is none.
type overrideJSON struct {
	MaxConcurrency *limit `json:"maxConcurrency"`
	MaxInFlight    *limit `json:"maxInFlight"`
	QueueThreshold *limit `json:"queueThreshold"`
	Weight         *int   `json:"weight"`
	Paused         *bool  `json:"paused"`
}

func (h *Handler) getStats(w http.ResponseWriter, r *http.Request) {
	reply(w, http.StatusOK, h.stats())
}

func (h *Handler) getGroups(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	by, err := parseOrder(q.Get("sort"))
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	n := defaultRows
	if s := q.Get("limit"); s != "" {
		n, err = strconv.Atoi(s)
		if err != nil || n < 1 || n > maxRows {
			fail(w, http.StatusBadRequest, "limit is "+quoted(s)+", want an integer from 1 to "+strconv.Itoa(maxRows))
			return
		}
	}
	total, rows := h.groups(h.e.AllGroupStats(), by, n, q.Get("prefix"))
	reply(w, http.StatusOK, groupsJSON{Total: total, Groups: rows})
}

func (h *Handler) getGroup(w http.ResponseWriter, r *http.Request) {
	st, name, ok := h.lookup(w, r)
	if ok {
		reply(w, http.StatusOK, h.row(st, name, h.e.GroupStats))
	}
}

func (h *Handler) getExplain(w http.ResponseWriter, r *http.Request) {
	st, name, ok := h.lookup(w, r)
	if !ok {
		return
	}
	x := h.explain(st.GroupKey)
	o, _ := h.e.GroupOverride(st.GroupKey)
	reply(w, http.StatusOK, explainJSON{
		Group:          name,
		MaxConcurrency: explainOne[limit](x.MaxConcurrency),
		MaxInFlight:    explainOne[limit](x.MaxInFlight),
		QueueThreshold: explainOne[limit](x.QueueThreshold),
		Weight:         explainOne[int](x.Weight),
		Override: overrideJSON{
			MaxConcurrency: limitPtr(o.MaxConcurrency),
			MaxInFlight:    limitPtr(o.MaxInFlight),
			QueueThreshold: limitPtr(o.QueueThreshold),
			Weight:         o.Weight,
			Paused:         o.Paused,
		},
	})
}

func explainOne[V ~int](x groupconc.LimitExplanation) explanation[V] {
	out := explanation[V]{Value: V(x.Value), Source: x.Source, Stack: make([]choice[V], len(x.Stack))}
	for i, c := range x.Stack {
		out.Stack[i] = choice[V]{Source: c.Source, Value: V(c.Value)}
	}
	return out
}

func limitPtr(v *int) *limit {
	if v == nil {
		return nil
	}
	l := limit(*v)
	return &l
}

func (h *Handler) getWarnings(w http.ResponseWriter, r *http.Request) {
	list, _ := h.warnings.list()
	reply(w, http.StatusOK, struct {
		Warnings []warningJSON `json:"warnings"`
	}{list})
}

// isJSON reports whether a Content-Type header names application/json.
func isJSON(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && t == "application/json"
}

// readBody reads r's body, at most maxBody bytes. More is an
// *http.MaxBytesError.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > maxBody {
		return nil, &http.MaxBytesError{Limit: maxBody}
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
}

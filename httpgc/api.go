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
// shape a PATCH takes.
type explainJSON struct {
	Group          string       `json:"group"`
	MaxConcurrency explanation  `json:"maxConcurrency"`
	MaxInFlight    explanation  `json:"maxInFlight"`
	QueueThreshold explanation  `json:"queueThreshold"`
	Weight         explanation  `json:"weight"`
	Override       overrideJSON `json:"override"`
}

type explanation struct {
	Value  limit                 `json:"value"`
	Source groupconc.LimitSource `json:"source"`
	Stack  []choice              `json:"stack"`
}

type choice struct {
	Source groupconc.LimitSource `json:"source"`
	Value  limit                 `json:"value"`
}

// overrideJSON is a group's overrides, with null where there is none.
type overrideJSON struct {
	MaxConcurrency *limit `json:"maxConcurrency"`
	MaxInFlight    *limit `json:"maxInFlight"`
	QueueThreshold *limit `json:"queueThreshold"`
	Weight         *limit `json:"weight"`
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
	total, rows, _ := h.groups(h.e.AllGroupStats(), by, n, q.Get("prefix"))
	reply(w, http.StatusOK, groupsJSON{Total: total, Groups: rows})
}

func (h *Handler) getGroup(w http.ResponseWriter, r *http.Request) {
	st, name, ok := h.lookup(w, r, false)
	if ok {
		reply(w, http.StatusOK, h.row(st, name, h.e.GroupStats))
	}
}

func (h *Handler) getExplain(w http.ResponseWriter, r *http.Request) {
	st, name, ok := h.lookup(w, r, false)
	if !ok {
		return
	}
	x := h.explain(st.GroupKey)
	o, _ := h.e.GroupOverride(st.GroupKey)
	reply(w, http.StatusOK, explainJSON{
		Group:          name,
		MaxConcurrency: explainOne(x.MaxConcurrency),
		MaxInFlight:    explainOne(x.MaxInFlight),
		QueueThreshold: explainOne(x.QueueThreshold),
		Weight:         explainOne(x.Weight),
		Override: overrideJSON{
			MaxConcurrency: limitPtr(o.MaxConcurrency),
			MaxInFlight:    limitPtr(o.MaxInFlight),
			QueueThreshold: limitPtr(o.QueueThreshold),
			Weight:         limitPtr(o.Weight),
		},
	})
}

func explainOne(x groupconc.LimitExplanation) explanation {
	out := explanation{Value: limit(x.Value), Source: x.Source, Stack: make([]choice, len(x.Stack))}
	for i, c := range x.Stack {
		out.Stack[i] = choice{Source: c.Source, Value: limit(c.Value)}
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

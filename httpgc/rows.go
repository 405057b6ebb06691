package httpgc

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kobe/groupconc"
)

// limit is a limit as JSON. It is a number, or "unlimited" for
// groupconc.Unlimited, since 2^63-1 is not exact in JavaScript.
type limit int

func (l limit) MarshalJSON() ([]byte, error) {
	if int(l) == groupconc.Unlimited {
		return []byte(`"unlimited"`), nil
	}
	return strconv.AppendInt(nil, int64(l), 10), nil
}

// statsJSON is the body of GET api/stats and a snapshot's "stats".
type statsJSON struct {
	Groups            int    `json:"groups"`
	Running           int    `json:"running"`
	Waiting           int    `json:"waiting"`
	Blocked           int    `json:"blocked"`
	GlobalInFlight    int    `json:"globalInFlight"`
	GlobalMaxInFlight limit  `json:"globalMaxInFlight"`
	Submitted         uint64 `json:"submitted"`
	Succeeded         uint64 `json:"succeeded"`
	Failed            uint64 `json:"failed"`
	Cancelled         uint64 `json:"cancelled"`
	Rejected          uint64 `json:"rejected"`
	Isolation         string `json:"isolation"`
}

// row is one group as the API shows it.
type row struct {
	Group          string  `json:"group"`
	Running        int     `json:"running"`
	Waiting        int     `json:"waiting"`
	Blocked        int     `json:"blocked"`
	InFlight       int     `json:"inFlight"`
	MaxConcurrency limit   `json:"maxConcurrency"`
	MaxInFlight    limit   `json:"maxInFlight"`
	QueueThreshold limit   `json:"queueThreshold"`
	Weight         int     `json:"weight"`
	OldestWaitMs   int64   `json:"oldestWaitMs"`
	Source         sources `json:"source"`

	// Why it waits, and what became of its tasks (GroupStats).
	Parent          string `json:"parent"`
	RunningCost     int    `json:"runningCost"`
	WaitingGlobal   int    `json:"waitingGlobal"`
	OldestRunningMs int64  `json:"oldestRunningMs"`
	Paused          bool   `json:"paused"`
	Succeeded       uint64 `json:"succeeded"`
	Failed          uint64 `json:"failed"`
	Cancelled       uint64 `json:"cancelled"`
	Rejected        uint64 `json:"rejected"`

	// Why it waits, in words (see why.go), and its history. PausedBy names
	// the ancestor whose pause holds a paused group that is not paused
	// itself.
	PausedBy string      `json:"pausedBy,omitempty"`
	Why      string      `json:"why"`
	Hung     bool        `json:"hung"`
	Recent   *recentJSON `json:"recent"`  // null until the history has a sample
	History  []int       `json:"history"` // waiting, one sample per Interval, oldest first
}

// sources names, per limit, the setting that decided it.
type sources struct {
	MaxConcurrency groupconc.LimitSource `json:"maxConcurrency"`
	MaxInFlight    groupconc.LimitSource `json:"maxInFlight"`
	QueueThreshold groupconc.LimitSource `json:"queueThreshold"`
	Weight         groupconc.LimitSource `json:"weight"`
}

func (h *Handler) stats() statsJSON {
	s := h.e.Stats()
	return statsJSON{
		Groups:            s.Groups,
		Running:           s.Running,
		Waiting:           s.Waiting,
		Blocked:           s.Blocked,
		GlobalInFlight:    s.GlobalInFlight,
		GlobalMaxInFlight: limit(s.GlobalMaxInFlight),
		Submitted:         s.Submitted,
		Succeeded:         s.Succeeded,
		Failed:            s.Failed,
		Cancelled:         s.Cancelled,
		Rejected:          s.Rejected,
		Isolation:         h.e.Policy().Isolation().String(),
	}
}

// explain returns what decided each of key's limits. For a group gone since
// its stats were read, it returns what the policy alone would decide.
func (h *Handler) explain(key string) groupconc.GroupExplanation {
	if x, ok := h.e.ExplainGroup(key); ok {
		return x
	}
	return h.e.Policy().Explain(key)
}

// row returns st as a row. find looks up its ancestors for its why.
func (h *Handler) row(st groupconc.GroupStats, name string, find lookup) row {
	x := h.explain(st.GroupKey)
	r := row{
		Group:           name,
		Running:         st.Running,
		Waiting:         st.Waiting,
		Blocked:         st.Blocked,
		InFlight:        st.InFlight,
		MaxConcurrency:  limit(st.MaxConcurrency),
		MaxInFlight:     limit(st.MaxInFlight),
		QueueThreshold:  limit(st.QueueThreshold),
		Weight:          st.Weight,
		OldestWaitMs:    st.OldestWait.Milliseconds(),
		Parent:          h.parentName(st.Parent),
		RunningCost:     st.RunningCost,
		WaitingGlobal:   st.WaitingGlobal,
		OldestRunningMs: st.OldestRunning.Milliseconds(),
		Paused:          st.Paused,
		Succeeded:       st.Succeeded,
		Failed:          st.Failed,
		Cancelled:       st.Cancelled,
		Rejected:        st.Rejected,
		Source: sources{
			MaxConcurrency: x.MaxConcurrency.Source,
			MaxInFlight:    x.MaxInFlight.Source,
			QueueThreshold: x.QueueThreshold.Source,
			Weight:         x.Weight.Source,
		},
	}
	h.why(&r, st, find)
	return r
}

// display returns the name key is shown by. A DisplayKey that panics yields
// a placeholder, never the key itself. The parentName result is how a row
// names its group's parent, as display shows keys, or "" at the top.
func (h *Handler) parentName(key string) string {
	if key == "" {
		return ""
	}
	return h.display(key)
}

// display returns the name a group of key is shown as: DisplayKey's, or
// the key. Either is made valid UTF-8 as encoding/json makes it, each bad
// byte a U+FFFD, so that the name the page sends back is the one shown.
func (h *Handler) display(key string) (name string) {
	if h.o.DisplayKey == nil {
		return validUTF8(key)
	}
	defer func() {
		if recover() != nil {
			name = "(DisplayKey panicked)"
		}
	}()
	return validUTF8(h.o.DisplayKey(key))
}

// validUTF8 returns s with each byte that is not valid UTF-8 replaced by
// U+FFFD, as encoding/json replaces it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// order is how a list of groups is sorted. Ties go by displayed name.
type order int

const (
	byOldestWait order = iota // longest wait first
	byWaiting                 // most waiting first
	byRunning                 // most running first
	byKey                     // displayed name, ascending
)

func parseOrder(s string) (order, error) {
	switch s {
	case "", "oldestWait":
		return byOldestWait, nil
	case "waiting":
		return byWaiting, nil
	case "running":
		return byRunning, nil
	case "key":
		return byKey, nil
	}
	return 0, fmt.Errorf("sort is %s, want oldestWait, waiting, running or key", quoted(s))
}

// item is a group competing for a place in a list. Its name is filled when
// first needed, so DisplayKey runs only for groups it matters for.
type item struct {
	st    groupconc.GroupStats
	name  string
	named bool
}

func (h *Handler) nameOf(it *item) string {
	if !it.named {
		it.name, it.named = h.display(it.st.GroupKey), true
	}
	return it.name
}

// top keeps the n groups that come first in an order. It is a heap whose
// root is the last of those kept. So each group costs O(log n), and a
// snapshot of G groups O(G log n), with n items held whatever G is. Once a
// group with a parent is offered, it keeps n×(maxDepth+1): a group whose
// ancestors do not fit in the list leaves room for later ones (tree.go).
type top struct {
	h     *Handler
	by    order
	n     int // the list's length
	keep  int // the groups kept
	items []item
}

// before reports whether a comes before b.
func (t *top) before(a, b *item) bool {
	switch t.by {
	case byOldestWait:
		if a.st.OldestWait != b.st.OldestWait {
			return a.st.OldestWait > b.st.OldestWait
		}
	case byWaiting:
		if a.st.Waiting != b.st.Waiting {
			return a.st.Waiting > b.st.Waiting
		}
	case byRunning:
		if a.st.Running != b.st.Running {
			return a.st.Running > b.st.Running
		}
	}
	return t.h.nameOf(a) < t.h.nameOf(b)
}

func (t *top) offer(it item) {
	if it.st.Parent != "" && t.keep == t.n {
		t.keep = t.n * (maxDepth + 1)
	}
	if len(t.items) < t.keep {
		t.items = append(t.items, it)
		for i := len(t.items) - 1; i > 0; {
			p := (i - 1) / 2
			if !t.before(&t.items[p], &t.items[i]) {
				break
			}
			t.items[p], t.items[i] = t.items[i], t.items[p]
			i = p
		}
		return
	}
	if !t.before(&it, &t.items[0]) {
		return
	}
	t.items[0] = it
	for i := 0; ; {
		last, l, r := i, 2*i+1, 2*i+2
		if l < len(t.items) && t.before(&t.items[last], &t.items[l]) {
			last = l
		}
		if r < len(t.items) && t.before(&t.items[last], &t.items[r]) {
			last = r
		}
		if last == i {
			return
		}
		t.items[i], t.items[last] = t.items[last], t.items[i]
		i = last
	}
}

// top returns how many groups of from have a displayed name starting with
// prefix, and the first n of them in order by, with their ancestors (see
// tree.go). If the list has room left while groups were not kept, the
// groups kept were children whose ancestors did not fit. Then every group
// is taken, in a second pass, so a later group that fits is not missed.
func (h *Handler) top(from iter.Seq[groupconc.GroupStats], by order, n int, prefix string) (total int, items []item) {
	t := top{h: h, by: by, n: n, keep: n, items: make([]item, 0, min(n, 64))}
	total = t.take(from, prefix)
	items = h.withAncestors(&t, t.items)
	if len(items) < n && len(t.items) < total {
		t = top{h: h, by: by, n: n, keep: math.MaxInt}
		total = t.take(from, prefix)
		items = h.withAncestors(&t, t.items)
	}
	return total, items
}

// take offers t the groups of from whose displayed name starts with
// prefix, sorts those it keeps, and returns how many were offered.
func (t *top) take(from iter.Seq[groupconc.GroupStats], prefix string) (total int) {
	for st := range from {
		it := item{st: st}
		if prefix != "" && !strings.HasPrefix(t.h.nameOf(&it), prefix) {
			continue
		}
		total++
		t.offer(it)
	}
	t.sort(t.items)
	return total
}

func (t *top) sort(items []item) {
	slices.SortFunc(items, func(a, b item) int {
		switch {
		case t.before(&a, &b):
			return -1
		case t.before(&b, &a):
			return 1
		}
		return 0
	})
}

// groups is top as rows.
func (h *Handler) groups(from iter.Seq[groupconc.GroupStats], by order, n int, prefix string) (total int, rows []row) {
	total, items := h.top(from, by, n, prefix)
	rows = make([]row, len(items))
	find := h.ancestorsIn(items)
	for i := range items {
		rows[i] = h.row(items[i].st, h.nameOf(&items[i]), find)
	}
	return total, rows
}

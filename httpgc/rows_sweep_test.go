package httpgc

import (
	"cmp"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// flatGroups are groups without parents, with ties in each order so that
// names break some of them.
var flatGroups = []groupconc.GroupStats{
	{GroupKey: "a", OldestWait: 1 * time.Second, Waiting: 2, Running: 1},
	{GroupKey: "b", OldestWait: 3 * time.Second, Waiting: 2, Running: 0},
	{GroupKey: "c", OldestWait: 3 * time.Second, Waiting: 1, Running: 4},
	{GroupKey: "d", OldestWait: 0, Waiting: 5, Running: 4},
	{GroupKey: "e", OldestWait: 2 * time.Second, Waiting: 0, Running: 1},
	{GroupKey: "f", OldestWait: 0, Waiting: 1, Running: 0},
}

// permutations yields every order of s.
func permutations[T any](s []T) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		var walk func(k int) bool
		walk = func(k int) bool {
			if k == len(s) {
				return yield(slices.Clone(s))
			}
			for i := k; i < len(s); i++ {
				s[k], s[i] = s[i], s[k]
				ok := walk(k + 1)
				s[k], s[i] = s[i], s[k]
				if !ok {
					return false
				}
			}
			return true
		}
		walk(0)
	}
}

// firstIn returns the keys of groups sorted by the order's measure, most
// first, and then by key, cut to n.
func firstIn(groups []groupconc.GroupStats, by order, n int) []string {
	measure := func(st groupconc.GroupStats) int64 {
		switch by {
		case byOldestWait:
			return int64(st.OldestWait)
		case byWaiting:
			return int64(st.Waiting)
		case byRunning:
			return int64(st.Running)
		}
		return 0
	}
	sorted := slices.Clone(groups)
	slices.SortFunc(sorted, func(a, b groupconc.GroupStats) int {
		return cmp.Or(cmp.Compare(measure(b), measure(a)), strings.Compare(a.GroupKey, b.GroupKey))
	})
	var keys []string
	for _, st := range sorted[:min(n, len(sorted))] {
		keys = append(keys, st.GroupKey)
	}
	return keys
}

func keysOf(items []item) []string {
	var keys []string
	for _, it := range items {
		keys = append(keys, it.st.GroupKey)
	}
	return keys
}

// A list holds the first n groups of its order, in that order, whatever
// order the executor yields them in.
func TestAListHoldsTheFirstGroupsOfItsOrderWhateverOrderTheyComeIn(t *testing.T) {
	h := &Handler{}
	for _, by := range []order{byOldestWait, byWaiting, byRunning, byKey} {
		for n := 1; n <= len(flatGroups)+1; n++ {
			want := firstIn(flatGroups, by, n)
			for groups := range permutations(slices.Clone(flatGroups)) {
				total, items := h.top(slices.Values(groups), by, n, "")
				require.Equal(t, len(flatGroups), total)
				require.Equal(t, want, keysOf(items), "order %d, n %d, groups come as %v", by, n, keysOfStats(groups))
			}
		}
	}
}

// A list longer than a heap's first two levels holds the first groups of
// its order too, for orders the groups come in drawn from a fixed seed.
func TestALongListHoldsTheFirstGroupsOfItsOrderWhateverOrderTheyComeIn(t *testing.T) {
	var groups []groupconc.GroupStats
	for i := range 12 {
		groups = append(groups, groupconc.GroupStats{GroupKey: fmt.Sprintf("g%02d", i),
			OldestWait: time.Duration(i*7%5) * time.Second, Waiting: i * 5 % 4, Running: i * 3 % 5})
	}
	r := rand.New(rand.NewPCG(1, 2))
	h := &Handler{}
	for _, by := range []order{byOldestWait, byWaiting, byRunning, byKey} {
		for n := 1; n <= len(groups)+1; n++ {
			want := firstIn(groups, by, n)
			for range 100 {
				r.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
				_, items := h.top(slices.Values(groups), by, n, "")
				require.Equal(t, want, keysOf(items), "order %d, n %d, groups come as %v", by, n, keysOfStats(groups))
			}
		}
	}
}

func keysOfStats(groups []groupconc.GroupStats) []string {
	var keys []string
	for _, st := range groups {
		keys = append(keys, st.GroupKey)
	}
	return keys
}

// DisplayKey may be costly (HashKey computes an HMAC), so a list names
// each group it sorts by name once, however often the group is compared.
func TestAListSortedByNameCallsDisplayKeyOncePerGroup(t *testing.T) {
	calls := map[string]int{}
	h := &Handler{o: Options{DisplayKey: func(key string) string {
		calls[key]++
		return "n-" + key
	}}}
	for groups := range permutations(slices.Clone(flatGroups)) {
		for n := 1; n <= len(flatGroups); n++ {
			clear(calls)
			h.top(slices.Values(groups), byKey, n, "")
			for key, c := range calls {
				require.Equal(t, 1, c, "%s, n %d, groups come as %v", key, n, keysOfStats(groups))
			}
		}
	}
	assert.NotEmpty(t, calls)
}

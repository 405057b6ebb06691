package groupstate

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// fairModel is what the fair line promises, kept the slow way: each
// group's running count and weight, and the waiting tasks in join order.
type fairModel struct {
	limit   int
	running map[string]int
	weight  map[string]int
	waiting []*tk // in join order
}

func (m *fairModel) total() (n int) {
	for _, r := range m.running {
		n += r
	}
	return n
}

// fairest returns the waiting task the next permit goes to: the first
// task of the group with the fewest running per weight, ties to the
// oldest first task, found by comparing every waiting task.
func (m *fairModel) fairest() *tk {
	var best *tk
	for _, k := range m.waiting { // oldest first: a later task of a group never wins
		g := k.p.Key()
		if best == nil {
			best = k
			continue
		}
		b := best.p.Key()
		if m.running[g]*m.weight[b] < m.running[b]*m.weight[g] {
			best = k
		}
	}
	return best
}

// TestFairLineHandsEachPermitToTheFairestTask drives the fair line through
// random submits, ends, leaves and weight changes, with one group often
// flooding the line so that its head runs while others wait far behind
// (the order takes over), and checks every hand-off against fairModel.
func TestFairLineHandsEachPermitToTheFairestTask(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkFairLine(t, seed) })
	}
}

func checkFairLine(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	keys := []string{"a", "b", "c", "d", "e", "f"}
	m := &fairModel{limit: 1 + rng.IntN(4), running: map[string]int{}, weight: map[string]int{}}
	for _, k := range keys {
		m.weight[k] = 1
	}
	limits := func(w map[string]int) func(string) Limits {
		w = maps.Clone(w)
		return func(key string) Limits { return unlimitedGroup(w[key]) }
	}
	f := newFixture(t, m.limit, true, limits(m.weight))
	var running []*tk
	admit := func(names []string) {
		for _, n := range names {
			i := slices.IndexFunc(m.waiting, func(k *tk) bool { return k.name == n })
			require.GreaterOrEqual(t, i, 0, "%s was not waiting", n)
			k := m.waiting[i]
			m.waiting = slices.Delete(m.waiting, i, i+1)
			m.running[k.p.Key()]++
			running = append(running, k)
		}
	}
	flood := rng.IntN(3) == 0
	for i := range 600 {
		switch c := rng.IntN(20); {
		case c < 9:
			key := keys[rng.IntN(len(keys))]
			if flood && rng.IntN(2) == 0 {
				key = "a"
			}
			k, out := f.submit(t, key, fmt.Sprintf("%s%d", key, i))
			if len(m.waiting) == 0 && m.total() < m.limit {
				require.Equal(t, Admitted, out)
				m.running[key]++
				running = append(running, k)
			} else {
				require.Equal(t, MustWait, out)
				m.waiting = append(m.waiting, k)
			}
		case c < 17 && len(running) > 0:
			j := rng.IntN(len(running))
			k := running[j]
			running = slices.Delete(running, j, j+1)
			m.running[k.p.Key()]--
			var want []string
			if w := m.fairest(); w != nil {
				want = []string{w.name}
			}
			got := f.end(t, k)
			require.Equal(t, want, got, "step %d", i)
			admit(got)
		case c < 19 && len(m.waiting) > 0:
			j := rng.IntN(len(m.waiting))
			k := m.waiting[j]
			require.True(t, k.p.Leave())
			k.p.Release()
			m.waiting = slices.Delete(m.waiting, j, j+1)
		default:
			m.weight[keys[rng.IntN(len(keys))]] = 1 + rng.IntN(3)
			c := f.r.Update(m.limit, Unlimited, limits(m.weight))
			require.Empty(t, c.Handed, "no permit was freed")
		}
	}
	for len(running) > 0 { // the line drains, fairly, to the end
		k := running[0]
		running = running[1:]
		m.running[k.p.Key()]--
		var want []string
		if w := m.fairest(); w != nil {
			want = []string{w.name}
		}
		got := f.end(t, k)
		require.Equal(t, want, got)
		admit(got)
	}
	require.Empty(t, m.waiting)
	var gs []*Group[tk]
	for _, key := range keys {
		if g, ok := f.r.Lookup(key); ok {
			gs = append(gs, g)
		}
	}
	requireQuiet(t, f.gl, gs...)
}

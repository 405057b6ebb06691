package groupstate

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// sharerItem is a sharer for the tests: its counts, and its link.
type sharerItem struct {
	id                  int
	held, below, weight atomic.Int64
	link                shareLink[*sharerItem]
}

func newSharerItem(id int) *sharerItem {
	s := &sharerItem{id: id}
	s.weight.Store(1)
	s.link = shareLink[*sharerItem]{of: s, held: &s.held, more: &s.below, weight: &s.weight}
	return s
}

// sharersModel is a sharers list kept beside a plain slice in the same
// order, which the model's choice scans whole.
type sharersModel struct {
	l     sharers[*sharerItem]
	order []*sharerItem
	items []*sharerItem
	seq   uint32
}

func newSharersModel(n int) *sharersModel {
	m := &sharersModel{seq: math.MaxUint32 - 1000} // seqs wrap
	for i := range n {
		m.items = append(m.items, newSharerItem(i))
	}
	return m
}

func (m *sharersModel) listed(s *sharerItem) bool { return slices.Contains(m.order, s) }

// sort puts order oldest first.
func (m *sharersModel) sort() {
	slices.SortFunc(m.order, func(a, b *sharerItem) int {
		return int(int32(a.link.oldest - b.link.oldest))
	})
}

// add lists s, whose oldest waiter joined last.
func (m *sharersModel) add(t *testing.T, s *sharerItem) {
	require.True(t, m.l.update(&s.link, true, m.seq))
	require.False(t, m.l.update(&s.link, true, m.seq))
	m.seq++
	m.order = append(m.order, s)
}

// pushFront lists s, whose oldest waiter joined before every other's.
func (m *sharersModel) pushFront(s *sharerItem) {
	s.link.oldest = m.seq - 1
	if len(m.order) > 0 {
		s.link.oldest = m.order[0].link.oldest - 1
	}
	m.l.pushFront(&s.link)
	m.order = append([]*sharerItem{s}, m.order...)
}

// left moves s, whose oldest waiter left, to a later one, which joined
// between it and the last. Each listed sharer's oldest is its own.
func (m *sharersModel) left(t *testing.T, s *sharerItem, rng *rand.Rand) {
	k := m.seq - 1 - s.link.oldest
	if k == 0 {
		return
	}
	at := s.link.oldest + 1 + rng.Uint32N(k)
	if slices.ContainsFunc(m.order, func(o *sharerItem) bool { return o.link.oldest == at }) {
		return
	}
	require.True(t, m.l.update(&s.link, true, at))
	m.sort()
}

func (m *sharersModel) remove(t *testing.T, s *sharerItem) {
	require.True(t, m.l.update(&s.link, false, 0))
	require.False(t, m.l.update(&s.link, false, 0))
	m.order = slices.DeleteFunc(m.order, func(o *sharerItem) bool { return o == s })
}

// want is the choice by definition: the first of those holding the
// fewest per weight, a count below 0 read as 0.
func (m *sharersModel) want() *sharerItem {
	var best *sharerItem
	var held, weight int64
	for _, s := range m.order {
		h, w := max(s.held.Load()+s.below.Load(), 0), s.weight.Load()
		if best == nil || h*weight < held*w {
			best, held, weight = s, h, w
		}
	}
	return best
}

// TestFairestIsTheFirstOfTheFewestPerWeight compares the list's order
// and choice with a sorted slice scanned whole, under random joins (last,
// or first), moves, removals, takes, releases and weight changes.
func TestFairestIsTheFirstOfTheFewestPerWeight(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := newSharersModel(12)
	for step := range 50000 {
		s := m.items[rng.IntN(len(m.items))]
		count := &s.held
		if rng.IntN(3) == 0 {
			count = &s.below
		}
		switch r := rng.IntN(10); {
		case r < 2 && !m.listed(s) && rng.IntN(4) == 0:
			m.pushFront(s) // a task sent back to the head of the line
		case r < 2 && !m.listed(s):
			m.add(t, s)
		case r < 3 && m.listed(s) && rng.IntN(2) == 0:
			m.left(t, s, rng)
		case r < 3 && m.listed(s):
			m.remove(t, s)
		case r < 6:
			count.Add(1)
		case r < 9 && count.Load() > -1:
			count.Add(-1) // to -1 at times: a release counted before its take
		case r == 9:
			s.weight.Store(1 + rng.Int64N(4))
		}
		var got []*sharerItem
		for n := m.l.head; n != nil; n = n.next {
			got = append(got, n.of)
		}
		require.True(t, slices.Equal(m.order, got), "step %d: the list's order", step)
		if len(m.order) > 0 {
			want := m.want()
			require.Same(t, want, m.l.fairest(), "step %d: got %v, want %v", step, m.l.fairest(), want)
		}
	}
}

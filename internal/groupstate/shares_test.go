package groupstate

import (
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
}

func newSharersModel(n int) *sharersModel {
	m := &sharersModel{}
	for i := range n {
		m.items = append(m.items, newSharerItem(i))
	}
	return m
}

func (m *sharersModel) listed(s *sharerItem) bool { return slices.Contains(m.order, s) }

func (m *sharersModel) push(s *sharerItem) {
	m.l.push(&s.link)
	m.order = append(m.order, s)
}

func (m *sharersModel) pushFront(s *sharerItem) {
	m.l.pushFront(&s.link)
	m.order = append([]*sharerItem{s}, m.order...)
}

func (m *sharersModel) remove(s *sharerItem) {
	m.l.remove(&s.link)
	m.order = slices.DeleteFunc(m.order, func(o *sharerItem) bool { return o == s })
}

// want is the choice by definition: the first, own before the list, of
// those holding the fewest per weight, a count below 0 read as 0.
func (m *sharersModel) want(own *sharerItem, held, weight int64) *sharerItem {
	best := own
	for _, s := range m.order {
		h, w := max(s.held.Load()+s.below.Load(), 0), s.weight.Load()
		if best == nil || h*weight < max(held, 0)*w {
			best, held, weight = s, h, w
		}
	}
	return best
}

// TestFairestIsTheFirstOfTheFewestPerWeight compares the choice with a
// whole scan under random pushes (to the back or the front), removals,
// takes, releases and weight changes, with a candidate of its own before
// the list or none.
func TestFairestIsTheFirstOfTheFewestPerWeight(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := newSharersModel(12)
	own := newSharerItem(-1)
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
			m.push(s)
		case r < 3 && m.listed(s):
			m.remove(s)
		case r < 6:
			count.Add(1)
		case r < 9 && count.Load() > -1:
			count.Add(-1) // to -1 at times: a release counted before its take
		case r == 9:
			s.weight.Store(1 + rng.Int64N(4))
		}
		var o *sharerItem
		held, weight := rng.Int64N(4)-1, 1+rng.Int64N(3)
		if rng.IntN(2) == 0 {
			o = own
		}
		want := m.want(o, held, weight)
		got := m.l.fairest(o, held, weight)
		require.Same(t, want, got, "step %d: got %v, want %v", step, got, want)
	}
}

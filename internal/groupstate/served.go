package groupstate

import (
	"cmp"
	"slices"
)

// The order lines serve waiting tasks in: by priority, then by age. A
// change of limits moves tasks out of several lines, and puts them back,
// or walks them on, in this order.

// sortBySubmitted orders ws, taken out of several lines, oldest first
// (compareAge). Tasks that tie, of one group, are told apart by how far
// along their walk they wait, furthest first: within one group and
// priority, a task further along came first, as nobody passes a waiter.
// Tasks of one line keep its order.
func sortBySubmitted[T any](ws []*Permits[T]) {
	slices.SortStableFunc(ws, func(a, b *Permits[T]) int {
		if c := compareAge(a, b); c != 0 {
			return c
		}
		return cmp.Compare(b.walkRank(), a.walkRank())
	})
}

// compareAge orders waiting tasks a and b by when they were submitted.
// Tasks submitted at one clock reading (as in a synctest bubble) go in the
// order they first waited, which is the order they were submitted in. A
// task of fair share with no Ext has no ticket: its group has no parent,
// nor children when it was submitted (NeedsExt). Such tasks tie with each
// other, and are tasks of one group; a task of a child group that ties
// with one was submitted after it.
func compareAge[T any](a, b *Permits[T]) int {
	if a.submitted != b.submitted {
		return cmp.Compare(a.submitted, b.submitted)
	}
	return cmp.Compare(int32(a.ticket()-b.ticket()), 0) // tickets wrap, as seqs do
}

// olderThan reports whether a was submitted before b (compareAge).
func olderThan[T any](a, b *Permits[T]) bool { return compareAge(a, b) < 0 }

// CompareServed orders tasks a and b as a line serves them, by priority
// and then by age. Those a change of limits moved walk on in this order.
func CompareServed[T any](a, b *T) int { return compareServed(permitsOf(a), permitsOf(b)) }

// servedBefore reports whether a line serves a before b: of a higher
// priority, or of the same and older.
func servedBefore[T any](a, b *Permits[T]) bool { return compareServed(a, b) < 0 }

// compareServed orders a and b as a line serves them (see servedBefore).
func compareServed[T any](a, b *Permits[T]) int {
	return cmp.Or(cmp.Compare(a.prio, b.prio), compareAge(a, b))
}

// waited gives p, which waits for the first time, its ticket: the count of
// tasks of the executor that did so before, as startWaiting counts them.
// Under IsolationOff it is kept in seq, which only the fair queue uses.
// Under fair share it is kept in the Ext. A task with none is a plain
// task of a group with no parent nor child; see compareAge.
func (p *Permits[T]) waited(ticket uint32) {
	if !p.group.global.fair {
		p.seq = ticket
	} else if x := p.x(); x != nil {
		x.ticket = ticket
	}
}

// ticket returns p's ticket (see waited), 0 if it has none.
func (p *Permits[T]) ticket() uint32 {
	if !p.group.global.fair {
		return p.seq
	}
	if x := p.x(); x != nil {
		return x.ticket
	}
	return 0
}

// walkRank places the line p waits in along the walk: each layer of the
// mode (walks), and within one the line of the nearest group first. It
// is the same for every task waiting in one line.
func (p *Permits[T]) walkRank() int {
	i := 0
	for j, y := range p.group.global.walk {
		if y.bit == p.bit {
			i = j
		}
	}
	lineDepth := int(p.group.depth()) - int(p.x().lvl())
	return i*(MaxAncestors+1) + MaxAncestors - lineDepth
}

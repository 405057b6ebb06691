package groupstate

import "encoding/binary"

// A task costs one permit at every layer, and its group has no parent,
// unless it is extended. An extended task carries an Ext, kept by its
// owner beside the task (see Global.SetExt). Permits has no room for it,
// and most tasks need none.

// MaxAncestors bounds how many ancestors a group may have.
const MaxAncestors = 8

// Ext is the part of a task's walk that only a task of cost above one, or
// of a group with a parent, needs. Its zero value is ready for Extend.
//
// It is kept to 32 bytes, so that a handle made with room for it fits the
// 192-byte size class (see withExt in the root package). At 224 bytes a
// task of W2's tree (benchmarks module) took 5 % more CPU time.
type Ext struct {
	level uint8 // the ancestor level of the layer it waits at; 0 is its group
	above uint8 // the level of the ancestor whose queue turned the last walk away; 0: none
	// unparked is 0 until a resume takes the task out of a pause line.
	// Then it is 1 plus the level of the group whose line that was (see
	// gate). A full ancestor's queue does not turn such a task away (see
	// keepSlot).
	unparked uint8
	// ticket orders the task among those that waited, under fair share
	// (see Permits.waited).
	ticket uint32
	// seen is that queue's nudges before the walk tried its permit (see
	// Block).
	seen uint64
	// anc holds the bits of Permits.held for each ancestor's layers, the
	// parent's first. Only heldBulkhead, heldConc and heldGroupSlot occur.
	anc [MaxAncestors]uint8
	// amt is made only for a cost above one. A task without it costs one.
	amt *costly
}

// costly is what a task of cost above one keeps: its cost, and what it
// took at each layer (see index). A cost above a limit takes the whole
// limit there.
type costly struct {
	cost   int64
	took   [3 + 2*MaxAncestors]int64
	handed int64 // see Permits.hand
}

// Extend makes p an extended task of cost c (at least 1),
// with e its Ext. Call it after Registry.Enter and before the first Try.
// The Global's ext hook must return e for p's task from then on.
func (p *Permits[T]) Extend(e *Ext, c int) {
	if c > 1 {
		e.amt = &costly{cost: int64(c)}
		if p.group.global.fair {
			p.group.family() // its group's later tasks are extended too (NeedsExt)
		}
	}
	p.flags |= extended
}

// NeedsExt reports whether a task of cost c entered as p must be extended.
// Under fair share so is a task of a group with children, or one that had
// a costly task. Only an Ext keeps its ticket there (see waited), which
// tells it apart from the extended tasks submitted at the same clock
// reading before it.
func (p *Permits[T]) NeedsExt(c int) bool {
	g := p.group
	return c > 1 || g.parent != nil || g.global.fair && g.kin.Load() != nil
}

// ext returns p's Ext. p is extended.
func (p *Permits[T]) ext() *Ext { return p.group.global.extOf(p.task()) }

// index returns the slot of amt for the layer bit at level lv.
func index(bit uint8, lv uint8) int {
	switch {
	case bit == heldGlobal:
		return 2
	case lv == 0 && bit == heldBulkhead:
		return 0
	case lv == 0:
		return 1
	case bit == heldBulkhead:
		return 1 + 2*int(lv)
	}
	return 2 + 2*int(lv)
}

// x returns p's Ext, or nil for a plain task. The walk fetches it once
// and hands it on, since fetching it calls the Global's hook.
func (p *Permits[T]) x() *Ext {
	if p.flags&extended == 0 {
		return nil
	}
	return p.extNow()
}

// extNow is ext, kept out of line so that x inlines.
//
//go:noinline
func (p *Permits[T]) extNow() *Ext { return p.ext() }

// amount returns the permits the task holds at the layer bit at level lv.
func (x *Ext) amount(bit, lv uint8) int64 {
	if x == nil || x.amt == nil {
		return 1
	}
	return max(x.amt.took[index(bit, lv)], 1)
}

// slotAbove reports whether the task holds a slot of an ancestor's queue.
// It reads anc's bits as one word.
func (x *Ext) slotAbove() bool {
	return binary.LittleEndian.Uint64(x.anc[:])&ancSlots != 0
}

// ancSlots is heldGroupSlot in each byte of a word.
const ancSlots = 0x0101010101010101 * uint64(heldGroupSlot)

// anc is one word: slotAbove reads it so.
var _ = [1]struct{}{}[MaxAncestors-8]

// costsOne reports whether the task costs one (nil: plain).
func (x *Ext) costsOne() bool { return x == nil || x.amt == nil }

// lvl returns the level of the layer the task waits at.
func (x *Ext) lvl() uint8 {
	if x == nil {
		return 0
	}
	return x.level
}

// amount returns the permits p holds at the layer bit at level lv.
func (p *Permits[T]) amount(bit, lv uint8) int64 {
	if p.flags&extended == 0 {
		return 1
	}
	return p.amountExt(bit, lv)
}

// amountExt is amount for an extended task, kept out of line so that
// amount inlines.
//
//go:noinline
func (p *Permits[T]) amountExt(bit, lv uint8) int64 { return p.ext().amount(bit, lv) }

// waitLevel returns the level of the layer p waits at.
func (p *Permits[T]) waitLevel() uint8 { return p.x().lvl() }

// heldAt returns the held bits of p at level lv.
func (p *Permits[T]) heldAt(lv uint8) *uint8 {
	if lv == 0 {
		return &p.held
	}
	return &p.ext().anc[lv-1]
}

// countRunning counts the extended task p, of Ext x, in (sign 1) or out
// (-1) of its group's running tasks and running cost, and of its
// ancestors' running cost.
func (p *Permits[T]) countRunning(x *Ext, sign int64) {
	k := p.group.kin.Load() // family, but with no call where kin is made
	if k == nil {
		k = p.group.family()
	}
	k.run.Add(sign)
	if x.amt == nil { // a cost of one: one permit at each level
		for a := p.group.up(); a != nil; a = a.up() {
			a.kin.Load().subCost.Add(sign) // a parent has its kin
		}
		return
	}
	k.over.Add(sign * (x.amount(heldConc, 0) - 1))
	lv := uint8(1)
	for a := p.group.up(); a != nil; a, lv = a.up(), lv+1 {
		a.kin.Load().subCost.Add(sign * x.amount(heldConc, lv))
	}
}

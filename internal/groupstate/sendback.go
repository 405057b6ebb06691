package groupstate

import "sync/atomic"

// A lowered limit sends back the tasks that hold its layer's permit and
// wait in a later line (lower). A task handed a permit is in no line
// until its carrier walks it on (Resume). It stands in its releaser's
// chain, or in a Changes' Handed, or waits for its turn (turn.go). The
// sweep cannot reach it there. So a walk handed a permit of a layer that
// is not its last checks, as it takes it, the layers it holds. A fresh
// walk that waited for its turn checks them as it walks on. If one is
// over its limit, it goes back to the head of that layer's line, as the
// sweep would have sent it. A paused group's concurrency limit is 0, so
// this holds its handed tasks too. A task handed its last layer counts as
// running from then (see handLocked), so it starts.

// changes tells a walk whether limits may have changed since its task was
// submitted. Only then can a layer it holds be over its limit, and the
// check costs a read of each such layer's count. The fair tree of W2
// (benchmarks module) read 6 % slower with the check on every hand-off.
type changes struct {
	running atomic.Int64 // changes under way (Tune may overlap Update)
	at      atomic.Int64 // the clock as the last one ended
}

func (c *changes) begin() { c.running.Add(1) }

func (c *changes) end(now int64) {
	for at := c.at.Load(); at < now && !c.at.CompareAndSwap(at, now); at = c.at.Load() {
	}
	c.running.Add(-1)
}

// since reports whether a change ran, or runs, at or after submitted.
func (c *changes) since(submitted int64) bool {
	return c.running.Load() != 0 || c.at.Load() >= submitted
}

// handedMid reports whether the walk, past the gate, was handed a permit
// of a layer other than its last, depth ancestors deep, with limits
// changed since its task was submitted.
func (p *Permits[T]) handedMid(gl *Global[T], depth uint8) bool {
	last := &gl.walk[len(gl.walk)-1]
	return p.flags&granted != 0 && (p.bit != last.bit || p.x().lvl() != last.top(depth)) && gl.changes.since(p.submitted)
}

// turnCame reports whether the walk is a fresh one whose turn came
// (turn.go), holding what it took before it waited, with limits changed
// since its task was submitted.
func (p *Permits[T]) turnCame(gl *Global[T], fresh bool) bool {
	return !fresh && p.bit == turnBit && gl.changes.since(p.submitted)
}

// overHeld returns the first layer of the walk that p holds and whose
// count is over its limit, as its line, bit and level. It returns nil if
// there is none.
func (p *Permits[T]) overHeld(gl *Global[T], depth uint8) (*line[T], uint8, uint8) {
	for i := range gl.walk {
		y := &gl.walk[i]
		for lv := uint8(0); lv <= y.top(depth); lv++ {
			if *p.heldAt(lv)&y.bit == 0 {
				continue
			}
			if l := p.group.ancestor(lv).lineOf(y.bit); l.held.load() > l.limit.Load() {
				return l, y.bit, lv
			}
		}
	}
	return nil, 0, 0
}

// sendBack puts p, which holds a layer over its limit (overHeld), back at
// the head of that layer's line, giving back what it took after it, as
// lower does. It returns the Changes to carry on, as a change of limits
// returns them. The caller owns them, and no longer owns p. It returns
// nil if no layer p holds is over its limit.
func (p *Permits[T]) sendBack(gl *Global[T], depth uint8) *Changes[T] {
	l, bit, lv := p.overHeld(gl, depth)
	if l == nil {
		return nil
	}
	var a *Group[T] // the global layer's
	if bit != heldGlobal {
		a = p.group.ancestor(lv)
	}
	c := new(Changes[T])
	requeue(l, bit, a, []*Permits[T]{p}, c)
	c.settle()
	return c
}

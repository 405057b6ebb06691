package groupstate

// kidQueue is the queue of a group's bulkhead or concurrency line under
// fair share once the group has a child. The line's waiters are tasks of
// the group's whole subtree. They stand in buckets: one per child with
// waiting tasks, holding those of the child's subtree, and one for the
// group's own tasks. A permit goes to the fairest bucket (shares.go): the
// child's subtree holding the fewest of the layer's permits per weight, or
// the group's own tasks holding the fewest global ones. Those count the own
// tasks handed a permit here on their way to the global layer too
// (fairGroup.handed). Then it goes to the bucket's first waiter of the
// highest priority. So a child with many waiting tasks does not hold back
// its siblings at their parent's limit. Under IsolationOff the line stays
// first come, first served.
//
// A bucket is made once and kept while its group is: the owner's own in
// the kidQueue, a child's in the child's kin. It is listed while it has
// waiters. So a child that waits again and again costs no allocation, and
// finding its bucket no map. The line's mu guards the buckets.
type kidQueue[T any] struct {
	owner   *Group[T]
	k       int                    // the layer: 0 the bulkhead, 1 the concurrency limit
	own     *kidBucket[T]          // the owner's own tasks', once one waited
	buckets sharers[*kidBucket[T]] // those with waiters
	n       int
	seq     uint32 // joins so far, modulo 2^32: a waiter's Permits.seq
	// chosen is the waiter the fair choice fell on, until it is served or
	// leaves, as in fairQueue. chosenIn is its bucket.
	chosen   *Permits[T]
	chosenIn *kidBucket[T]
}

// kidBucket holds the waiting tasks of one child's subtree, or of the
// owner's own tasks (g is the owner then).
// Its link reads the permits it holds (see kidQueue) and its group's
// weight.
type kidBucket[T any] struct {
	g    *Group[T]
	q    fifo[T]
	link shareLink[*kidBucket[T]]
}

// kidQueueOf makes g's line l, of layer bit, serve its waiters by child
// (see kidQueue), moving those waiting into their buckets in order. It is
// called as g gets its first child, under fair share.
func kidQueueOf[T any](g *Group[T], l *line[T], bit uint8) {
	r := l.lock()
	defer r.unlock()
	if r.disc != nil {
		return
	}
	k := &kidQueue[T]{owner: g, k: layerIndex(bit)}
	// A costly head waiting while permits are free is the choice made as
	// they freed (see join). It stays chosen, so the child's task that
	// makes this queue does not go ahead of it.
	var head *Permits[T]
	if r.fifo.costly && !r.fifo.empty() && l.held.load() < l.limit.Load() {
		head = r.fifo.peek()
	}
	r.fifo.each(nil, func(w *Permits[T]) {
		r.fifo.remove(w)
		k.push(w)
	})
	if head != nil {
		k.chosen, k.chosenIn = head, k.bucket(k.child(head))
	}
	r.disc = k
}

// child returns the group whose bucket w stands in: the owner's child on
// w's path, or the owner for its own task.
func (k *kidQueue[T]) child(w *Permits[T]) *Group[T] {
	lv := w.levelOf(k.owner)
	if lv == 0 {
		return k.owner
	}
	return w.group.ancestor(lv - 1)
}

// bucket returns g's bucket, making it if it has none.
func (k *kidQueue[T]) bucket(g *Group[T]) *kidBucket[T] {
	at, held, more := &k.own, &g.fair.running, &g.fair.handed
	if g != k.owner {
		kin := g.family()
		at, held, more = &kin.buckets[k.k], &kin.held[k.k], &noMore
	}
	if *at == nil {
		b := &kidBucket[T]{g: g}
		b.link = shareLink[*kidBucket[T]]{of: b, held: held, more: more, weight: &g.fair.weight}
		*at = b
	}
	return *at
}

func (k *kidQueue[T]) empty() bool { return k.n == 0 }

func (k *kidQueue[T]) push(w *Permits[T]) {
	w.seq = k.seq
	k.seq++
	b := k.bucket(k.child(w))
	if b.q.empty() {
		b.link.oldest = w.seq
		k.buckets.add(&b.link)
	}
	b.q.push(w)
	k.n++
}

// pushFront puts back w, which waited before those here (see requeue). So
// its bucket is listed first. The fair choice made without it is made
// again.
func (k *kidQueue[T]) pushFront(w *Permits[T]) {
	w.seq = k.seq - 1
	if h := k.buckets.head; h != nil {
		w.seq = h.oldest - 1
	}
	b := k.bucket(k.child(w))
	if !b.q.empty() {
		k.buckets.remove(&b.link)
	}
	b.link.oldest = w.seq
	k.buckets.pushFront(&b.link)
	b.q.pushFront(w)
	k.n++
	k.chosen, k.chosenIn = nil, nil
}

func (k *kidQueue[T]) peek() *Permits[T] {
	if k.chosen == nil {
		b := k.buckets.fairest()
		k.chosen, k.chosenIn = b.q.peek(), b
	}
	return k.chosen
}

func (k *kidQueue[T]) chooses() bool { return true }

// pop takes out the waiter the fair choice falls on, and counts the
// permits it is handed in its bucket's share at once. A release of several
// permits (a costly task's) hands them out in one go. Each choice must see
// the ones before it, or one child would take them all. The waiter's walk
// then does not count them again (Permits.advance).
//
// The bucket is the one the choice found. A child's counts what the
// child's subtree holds of the layer (kidHeld). The owner's counts its own
// tasks on their way to the global layer (Permits.hand).
func (k *kidQueue[T]) pop() *Permits[T] {
	w, b := k.peek(), k.chosenIn
	k.out(b, w)
	if b != k.own {
		b.link.held.Add(w.x().amount(w.bit, w.levelOf(k.owner)))
	} else {
		w.hand(w.bit)
	}
	return w
}

func (k *kidQueue[T]) remove(w *Permits[T]) { k.out(k.bucket(k.child(w)), w) }

// out takes w out of its bucket b.
func (k *kidQueue[T]) out(b *kidBucket[T], w *Permits[T]) {
	if w == k.chosen {
		k.chosen = nil
	}
	b.q.remove(w)
	k.n--
	switch {
	case b.q.empty():
		k.buckets.remove(&b.link)
	case b.link.oldest == w.seq:
		k.buckets.update(&b.link, true, b.q.firstSeq())
	}
}

func (k *kidQueue[T]) gave(*Permits[T]) {}

func (k *kidQueue[T]) each(_ *Group[T], f func(w *Permits[T])) {
	for n := k.buckets.head; n != nil; {
		next := n.next // f may empty the bucket, which leaves the list
		n.of.q.each(nil, f)
		n = next
	}
}

func (k *kidQueue[T]) oldest(*Group[T]) int64 {
	first := int64(noWaiter)
	for n := k.buckets.head; n != nil; n = n.next {
		first = min(first, n.of.q.oldest(nil))
	}
	return first
}

// heads looks in every bucket for the owner's queue. For a queue of a
// group below the owner, g, it looks only in the bucket of the child on
// g's path, which holds g's subtree. The owner's own tasks and a childless
// child's stand in their bucket in the order they were submitted (see
// fifo.heads).
func (k *kidQueue[T]) heads(g *Group[T], holds func(w *Permits[T]) bool, f func(w *Permits[T])) {
	if g != k.owner && g.under(k.owner) {
		c := g.ancestor(g.depth() - k.owner.depth() - 1)
		if b := c.family().buckets[k.k]; b != nil {
			b.q.heads(g, holds, f)
		}
		return
	}
	for n := k.buckets.head; n != nil; n = n.next {
		b := n.of
		b.q.oldestHolders(b != k.own && b.g.hasKids(), holds, f)
	}
}

// ahead counts the waiters of w's bucket served before w. The buckets are
// served in turn, so those of other buckets are not said to be ahead. The
// waiter the fair choice fell on is served first.
func (k *kidQueue[T]) ahead(w *Permits[T]) int {
	b := k.bucket(k.child(w))
	if k.chosenIn != b {
		return b.q.ahead(w)
	}
	return b.q.aheadAfter(w, k.chosen)
}

// kidHeld counts, under fair share, the permits of the layer bit of the
// ancestor at level lv (above 0) of g, held by a task of Ext x. They are
// counted for the ancestor's child on g's path, whose share of that layer
// the ancestor's kidQueue weighs.
func (gl *Global[T]) kidHeld(g *Group[T], x *Ext, bit, lv uint8, sign int64) {
	if gl.fair {
		kidHeldFair(g, x, bit, lv, sign)
	}
}

// kidHeldFair is kidHeld's count, kept apart so that kidHeld inlines. The
// child has a parent, so it has its kin.
func kidHeldFair[T any](g *Group[T], x *Ext, bit, lv uint8, sign int64) {
	g.ancestor(lv - 1).kin.Load().held[layerIndex(bit)].Add(sign * x.amount(bit, lv))
}

// layerIndex is 0 for the bulkhead, 1 for the concurrency layer.
func layerIndex(bit uint8) int {
	if bit == heldConc {
		return 1
	}
	return 0
}

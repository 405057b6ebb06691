package groupstate

// Within returns g's descendants that r holds, and with each group its
// children evicted while busy (Departed), if they are at most most. Else
// it returns false, having looked at no more than most of them. A parent's
// snapshot reads them, when they are fewer than the active groups, in
// place of every active group. So a snapshot of a small subtree costs that
// subtree, however many groups are active elsewhere.
//
// A child evicted during the walk may be found twice, under its parent and
// then among its parent's departed, or not at all. The caller counts a
// group once.
func (r *Registry[T]) Within(g *Group[T], most int) ([]*Group[T], bool) {
	return r.subtreeUpTo(g, walkBusy, most)
}

// ActiveLen reports how long the list of active groups is. It holds at
// least the groups with something going on, and at most about twice as
// many (see active). It sweeps nothing.
func (r *Registry[T]) ActiveLen() int {
	r.active.mu.Lock()
	defer r.active.mu.Unlock()
	return len(r.active.groups)
}

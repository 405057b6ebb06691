package groupstate

import (
	"errors"
	"sync"
)

// creations lets callers that create the same group at once share one
// creation, so that the policy's resolvers run once per group. It is
// singleflight's Do, with two differences. A creation whose caller's
// goroutine ends in it (runtime.Goexit in a resolver, as a test's t.FailNow
// does) ends no other caller's. Each one that waited for it tries again.
// And a creation that would wait, through the parents' creations it waits
// for, for itself fails instead. Within one policy the parents form no
// cycle, but a change of policy may give a key being made a parent that
// is being made under it.
type creations[T any] struct {
	mu       sync.Mutex
	inflight map[string]*creation[T] // guarded by mu
}

type creation[T any] struct {
	key      string
	done     chan struct{}
	g        *Group[T]
	err      error
	returned bool         // create returned, with g and err
	waitsOn  *creation[T] // the parent's creation it waits for; guarded by creations.mu
}

// do returns the creation of key's group. That is create's call, unless
// another caller is making it, whose call it waits for then. Its returned is false
// if that call did not return. from is the creation that needs key's
// group as its parent, nil for none. cycle makes the error of a creation
// that would wait for itself, given the keys on the way back to it.
func (c *creations[T]) do(key string, from *creation[T], create func(key string, self *creation[T]) (*Group[T], error), cycle func(key string, chain []string) error) *creation[T] {
	c.mu.Lock()
	w, ok := c.inflight[key]
	if ok {
		var chain []string
		for x := w; from != nil && x != nil; x = x.waitsOn {
			if chain = append(chain, x.key); x == from {
				c.mu.Unlock()
				return &creation[T]{returned: true, err: cycleErr(cycle, from.key, chain)}
			}
		}
	} else {
		w = &creation[T]{key: key, done: make(chan struct{})}
		if c.inflight == nil {
			c.inflight = make(map[string]*creation[T])
		}
		c.inflight[key] = w
	}
	if from != nil {
		from.waitsOn = w
		defer c.waited(from)
	}
	c.mu.Unlock()
	if ok {
		<-w.done
		return w
	}
	defer func() { // also as the goroutine ends in create
		c.mu.Lock()
		delete(c.inflight, key)
		c.mu.Unlock()
		close(w.done)
	}()
	w.g, w.err = create(key, w)
	w.returned = true
	return w
}

// waited records that from waits for no creation now.
func (c *creations[T]) waited(from *creation[T]) {
	c.mu.Lock()
	from.waitsOn = nil
	c.mu.Unlock()
}

func cycleErr(cycle func(key string, chain []string) error, key string, chain []string) error {
	if cycle == nil {
		return errors.New("groupstate: a cycle of parents among the groups being made")
	}
	return cycle(key, chain)
}

func deepErr(tooDeep func(key string, chain []string) error, key string, chain []string) error {
	if tooDeep == nil {
		return errors.New("groupstate: more than MaxAncestors ancestors")
	}
	return tooDeep(key, chain)
}

// create makes the group for key and stores it, unless one is there. A
// parent is made first, outside mu, and counts the child as one of its
// tasks while the child is remembered. So a parent is never forgotten
// before its children.
func (r *Registry[T]) create(key string, self *creation[T]) (*Group[T], error) {
	for {
		r.mu.RLock()
		parents, tooDeep := r.parents, r.tooDeep
		r.mu.RUnlock()
		var parent *Group[T]
		if parents != nil {
			chain, err := parents(key)
			if err != nil {
				return nil, err
			}
			// A chain that ends at a group made before counts that group's
			// ancestors too. Too many are refused before any group is made.
			if n := len(chain); n > 0 {
				if top, ok := r.Lookup(chain[n-1]); ok && n+int(top.depth()) > MaxAncestors {
					return nil, deepErr(tooDeep, key, append(chain[:n-1:n-1], top.path()...))
				}
			}
			if len(chain) > 0 {
				if parent, err = r.get(chain[0], self); err != nil {
					return nil, err
				}
			}
			if parent != nil && parent.depth() == MaxAncestors { // kept from before
				parent.exit()
				return nil, deepErr(tooDeep, key, parent.path())
			}
		}
		if g := r.createHeld(key, parent); g != nil {
			return g, nil
		}
		// The parent was evicted meanwhile. Its key's next group is the
		// parent now.
		parent.exit()
	}
}

// createHeld is createUnder, which counts parent's count the caller holds
// out if a resolver ends the goroutine (runtime.Goexit).
func (r *Registry[T]) createHeld(key string, parent *Group[T]) *Group[T] {
	returned := false
	defer func() {
		if !returned && parent != nil {
			parent.exit()
		}
	}()
	g := r.createUnder(key, parent)
	returned = true
	return g
}

// createUnder makes and stores the group for key under parent, which
// counts the caller as one of its tasks, unless a group for key is there.
// It returns nil if parent adopts no children, evicted meanwhile.
func (r *Registry[T]) createUnder(key string, parent *Group[T]) *Group[T] {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if v, ok := r.groups.Load(key); ok {
		if parent != nil {
			parent.exit()
		}
		return v.(*Group[T])
	}
	g := newGroup(r, key, r.share(r.resolve(key)), parent)
	if parent == nil {
		r.store(g)
		return g
	}
	if !parent.hasKids() && r.global.fair { // children share its lines fairly
		kidQueueOf(parent, &parent.bulkhead, heldBulkhead)
		kidQueueOf(parent, &parent.conc, heldConc)
		r.global.toTree()
	}
	if !parent.family().adopt(g, r) {
		return nil
	}
	return g
}

// store stores g, just made, and counts it.
func (r *Registry[T]) store(g *Group[T]) {
	g.idleAt.Store(r.clock()) // not forgotten before its first task enters
	r.groups.Store(g.key, g)
	r.count.Add(1)
}

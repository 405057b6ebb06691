package groupstate

import "sync"

// creations lets callers that create the same group at once share one
// creation, so that the policy's resolvers run once per group. It is
// singleflight's Do, but a creation whose caller's goroutine ends in it
// (runtime.Goexit in a resolver, as a test's t.FailNow does) ends no other
// caller's: each one that waited for it tries again.
type creations[T any] struct {
	mu       sync.Mutex
	inflight map[string]*creation[T] // guarded by mu
}

type creation[T any] struct {
	done     chan struct{}
	g        *Group[T]
	err      error
	returned bool // create returned, with g and err
}

// do returns the creation of key's group: create's call, unless another
// caller is making it for key, whose call it waits for then. Its returned
// is false if that call did not return.
func (c *creations[T]) do(key string, create func(key string) (*Group[T], error)) *creation[T] {
	c.mu.Lock()
	if w, ok := c.inflight[key]; ok {
		c.mu.Unlock()
		<-w.done
		return w
	}
	w := &creation[T]{done: make(chan struct{})}
	if c.inflight == nil {
		c.inflight = make(map[string]*creation[T])
	}
	c.inflight[key] = w
	c.mu.Unlock()
	defer func() { // also as the goroutine ends in create
		c.mu.Lock()
		delete(c.inflight, key)
		c.mu.Unlock()
		close(w.done)
	}()
	w.g, w.err = create(key)
	w.returned = true
	return w
}

package redisgc

import (
	"net"
	"sync"
	"testing"
	"time"
)

// faultProxy is a TCP proxy on 127.0.0.1 between a replica's client and
// Redis. It forwards every byte until a test breaks the link: freeze holds
// every byte and keeps the sockets open, cut resets every connection (and
// each new one), slow holds each chunk a while. restore forwards again.
type faultProxy struct {
	t  testing.TB
	ln net.Listener
	wg sync.WaitGroup // the accept loop and every pump

	mu      sync.Mutex
	target  string             // guarded by mu: the address it forwards to
	frozen  bool               // guarded by mu
	cut     bool               // guarded by mu
	closed  bool               // guarded by mu
	delay   time.Duration      // guarded by mu
	held    int                // guarded by mu: stuck links that have held a request
	links   map[*link]struct{} // guarded by mu
	changed chan struct{}      // guarded by mu: closed and replaced at every change
}

// link is one client connection and its own connection to Redis.
type link struct {
	client, server *net.TCPConn
	dead           bool // guarded by the proxy's mu
	stuck          bool // guarded by the proxy's mu: frozen alone
	holding        bool // guarded by the proxy's mu: a request is held, stuck
}

// newFaultProxy starts a proxy to target, closed in the test's cleanup.
func newFaultProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	p := &faultProxy{t: t, ln: ln, target: target, links: map[*link]struct{}{}, changed: make(chan struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// addr returns the address a client dials to reach Redis through p.
func (p *faultProxy) addr() string { return p.ln.Addr().String() }

// freeze stops forwarding: bytes wait in the proxy, the sockets stay open.
func (p *faultProxy) freeze() { p.set(func() { p.frozen = true }) }

// freezeOpen freezes the links open now alone, as a stuck flow: new
// connections go through. restore lets the held bytes go on.
func (p *faultProxy) freezeOpen() {
	p.set(func() {
		for l := range p.links {
			l.stuck = true
		}
	})
}

// heldStuck returns how many stuck links have held a request to Redis.
func (p *faultProxy) heldStuck() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// retarget forwards to addr from now on, and resets every connection open
// now: the client dials again, and reaches addr. So a proxy plays the
// address that follows a failover to the new primary.
func (p *faultProxy) retarget(addr string) {
	p.set(func() {
		p.target = addr
		for l := range p.links {
			p.resetLocked(l)
		}
	})
}

// redirect forwards new connections to addr, and leaves those open now on
// the old target: so a DNS name behaves that a failover moves.
func (p *faultProxy) redirect(addr string) { p.set(func() { p.target = addr }) }

// slow holds each chunk d after it was read, in both directions.
func (p *faultProxy) slow(d time.Duration) { p.set(func() { p.delay = d }) }

// cutAll resets every connection, and each new one until restore.
func (p *faultProxy) cutAll() {
	p.set(func() {
		p.cut = true
		for l := range p.links {
			p.resetLocked(l)
		}
	})
}

// restore forwards again, at once: held bytes go on in order.
func (p *faultProxy) restore() {
	p.set(func() {
		p.frozen, p.cut, p.delay = false, false, 0
		for l := range p.links {
			l.stuck = false
		}
	})
}

// set changes the proxy's state and wakes every pump that waits.
func (p *faultProxy) set(change func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	change()
	close(p.changed)
	p.changed = make(chan struct{})
}

// close resets every connection and waits for the proxy's goroutines.
func (p *faultProxy) close() {
	p.set(func() {
		p.closed = true
		for l := range p.links {
			p.resetLocked(l)
		}
	})
	_ = p.ln.Close()
	p.wg.Wait()
}

// resetLocked ends l with a reset sent to the client: a linger of 0 makes
// Close send RST instead of FIN.
func (p *faultProxy) resetLocked(l *link) {
	if l.dead {
		return
	}
	l.dead = true
	delete(p.links, l)
	_ = l.client.SetLinger(0)
	_ = l.client.Close()
	_ = l.server.Close()
}

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		client := c.(*net.TCPConn)
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		s, err := net.Dial("tcp", target)
		if err != nil {
			_ = client.SetLinger(0)
			_ = client.Close()
			continue
		}
		l := &link{client: client, server: s.(*net.TCPConn)}
		p.mu.Lock()
		p.links[l] = struct{}{}
		if p.cut || p.closed {
			p.resetLocked(l)
		}
		p.mu.Unlock()
		p.wg.Go(func() { p.pump(l, l.client, l.server) })
		p.wg.Go(func() { p.pump(l, l.server, l.client) })
	}
}

// pump forwards from src to dst, each chunk once hold lets it go.
func (p *faultProxy) pump(l *link, src, dst *net.TCPConn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.hold(l, time.Now(), src == l.client) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			// The other pump may hold a chunk: wake it to see l is gone.
			p.set(func() {
				if !l.dead {
					l.dead = true
					delete(p.links, l)
					_ = l.client.Close()
					_ = l.server.Close()
				}
			})
			return
		}
	}
}

// hold waits until a chunk read at readAt may go: the link is not frozen,
// and the delay now in force has passed since readAt. It reports false if
// the link was reset meanwhile. toServer says the chunk goes to Redis.
func (p *faultProxy) hold(l *link, readAt time.Time, toServer bool) bool {
	for {
		p.mu.Lock()
		dead, frozen, delay, changed := l.dead, p.frozen || l.stuck, p.delay, p.changed
		if l.stuck && toServer && !l.holding {
			l.holding = true
			p.held++
		}
		p.mu.Unlock()
		if dead {
			return false
		}
		var timer *time.Timer
		var fire <-chan time.Time
		if !frozen {
			left := time.Until(readAt.Add(delay))
			if left <= 0 {
				return true
			}
			timer = time.NewTimer(left)
			fire = timer.C
		}
		select {
		case <-changed:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

package redisgc

import (
	"context"
	"fmt"
	"time"
)

// call is one sync sent to Redis on a goroutine of its own. A client may
// ignore its context on a socket read. A hung link would then hold Run
// until the client's own timeout. So Run waits for the reply on a channel,
// and gives up on it at its bound. Only one call is in flight at a time.
// A hung link thus holds one goroutine and one connection, not one per tick.
type call struct {
	mode, member string
	seq          uint64 // above every earlier call's, so Redis runs no late copy of those after it
	reqs         []poolRequest
	pools        []*pool         // the pool of each request.
	groups       map[string]load // the demand the requests were made from.
	sent         time.Time
	// bound is when the call is given up. It is a RenewInterval after it
	// was sent, and no later than the lease's deadline for a renewal.
	bound     time.Time
	cancel    context.CancelFunc
	done      chan reply // buffered, so the goroutine never waits on Run.
	abandoned bool       // its reply no longer counts.
}

// reply is what a call got back.
type reply struct {
	res syncResult
	err error
}

// send runs cl on a goroutine tracked by c.calls. Its context ends at its
// bound. A client that ignores the context returns at its own timeout, or
// when it is closed. The goroutine ends then. A client that panics fails
// the call, as an error would, rather than the process.
func (c *Coordinator) send(ctx context.Context, cl *call) {
	cctx, cancel := context.WithDeadline(ctx, cl.bound)
	c.seq++
	cl.seq, cl.cancel, cl.done = c.seq, cancel, make(chan reply, 1)
	c.call = cl
	c.calls.Go(func() {
		defer cancel()
		var r reply
		returned := false
		defer func() {
			if !returned { // a panic, or runtime.Goexit
				r = reply{err: fmt.Errorf("redisgc: sync: the client panicked: %v", recover())}
			}
			cl.done <- r
		}()
		r.res, r.err = runSync(cctx, c.client, &c.opts, cl.member, cl.mode, cl.seq, cl.reqs)
		returned = true
	})
}

// abandon gives up on the call in flight. Whatever it returns is ignored.
// The replica keeps what it holds until its lease's deadline.
func (c *Coordinator) abandon() {
	cl := c.call
	if cl == nil || cl.abandoned {
		return
	}
	cl.abandoned = true
	cl.cancel()
	c.lastErr = fmt.Errorf("redisgc: sync: no reply within %v", cl.bound.Sub(cl.sent).Round(time.Millisecond))
	if c.mode == ModeConnected {
		c.mode = ModeHolding
	}
}

// await waits for the reply of the call in flight until the given time.
// If none came by then, it abandons the call and reports false.
func (c *Coordinator) await(until time.Time) (reply, bool) {
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case r := <-c.call.done:
		c.call = nil
		return r, true
	case <-t.C:
		c.abandon()
		return reply{}, false
	}
}

// nextTick returns when Run should tick again. That is the next sync, or
// the fallback (fallbackAt) or the bound of the call in flight if sooner.
func (c *Coordinator) nextTick() time.Duration {
	next := c.opts.SyncInterval
	if c.member != "" {
		next = min(next, time.Until(c.fallbackAt()))
	}
	if cl := c.call; cl != nil && !cl.abandoned {
		next = min(next, time.Until(cl.bound))
	}
	return max(next, 0)
}

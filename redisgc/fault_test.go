package redisgc

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fault tests run three busy replicas on a limit of 12, with a
// fallback of 12/6 = 2, so that a replica cut off holds 4, twice its
// fallback. Replica a reaches Redis through a faultProxy, b and c directly.
// While a is cut off the fleet may run 12 + 2 = 14 tasks at once, never
// more; a falls back before its lease can end in Redis, and the others
// take its share only then.
const (
	faultLimit    = 12
	faultExpected = 6
	faultEach     = faultLimit / 3
	faultBound    = faultLimit + faultLimit/faultExpected
)

// cutOff runs the fleet, breaks a's link with fault, checks the bounds
// while it is broken, then heals it and checks that the fleet recovers.
func cutOff(t *testing.T, fault func(*faultProxy)) { cutOffAfter(t, nil, fault) }

// cutOffAfter is cutOff with a first phase, run once the fleet has split.
func cutOffAfter(t *testing.T, first func(*liveFleet, *faultProxy, *liveReplica), fault func(*faultProxy)) {
	cutOffWith(t, redis.Options{}, first, fault)
}

// cutOffWith is cutOffAfter with a's client built from o (its Addr set here).
func cutOffWith(t *testing.T, o redis.Options, first func(*liveFleet, *faultProxy, *liveReplica), fault func(*faultProxy)) {
	s := startRedis(t)
	p := newFaultProxy(t, s.addr())
	f := newLiveFleet(t, faultLimit, faultExpected)
	o.Addr = p.addr()
	a, b, c := f.addWith("a", &o), f.add("b", s.addr()), f.add("c", s.addr())
	// Runs before the replicas close: a call held by the proxy ends.
	t.Cleanup(p.restore)
	f.split(10*time.Second, faultEach, a, b, c)
	f.checkPeak(faultLimit, "connected,")
	if first != nil {
		first(f, p, a)
	}

	fault(p)
	f.await(10*time.Second, "b and c never took a's share", func() bool { return b.limit()+c.limit() == faultLimit })
	f.syncsOf(b, 10)
	f.checkPeak(faultBound, "with a cut off,")
	f.await(10*time.Second, "a never fell back", func() bool { return a.mode() == ModeFallback })
	a.checkFellBackInTime()
	if got := a.limit(); got > faultLimit/faultExpected {
		t.Errorf("a cut off: limit %d, want its fallback %d", got, faultLimit/faultExpected)
	}

	p.restore()
	f.split(10*time.Second, faultEach, a, b, c)
	f.checkPeak(faultBound, "as a came back,")
	f.syncsOf(b, 10)
	f.checkPeak(faultLimit, "healed,")
}

func TestAReplicaWhoseLinkFreezesFallsBackWithinItsLease(t *testing.T) {
	cutOff(t, (*faultProxy).freeze)
}

// A client with no timeouts of its own waits on a frozen link for ever. The
// replica still falls back within its lease: it never waits on the client.
func TestAReplicaWhoseClientHasNoTimeoutsFallsBackWithinItsLeaseOnAFrozenLink(t *testing.T) {
	noTimeouts := redis.Options{DialTimeout: time.Hour, ReadTimeout: -1, WriteTimeout: -1, PoolTimeout: time.Hour, MaxRetries: -1}
	cutOffWith(t, noTimeouts, nil, (*faultProxy).freeze)
}

func TestAReplicaWhoseLinkIsCutFallsBackWithinItsLease(t *testing.T) {
	cutOff(t, (*faultProxy).cutAll)
}

// A link slower than usual, but within the bound on a call, changes
// nothing: the replica stays connected and the fleet within its limit.
// Slower than a lease's time left, a renewal reaches Redis while the lease
// is live, but its reply comes back after it has ended: as a cut link.
func TestAReplicaWhoseLinkSlowsPastItsLeaseFallsBackWithinIt(t *testing.T) {
	slower := func(f *liveFleet, p *faultProxy, a *liveReplica) {
		p.slow(40 * time.Millisecond)
		f.syncsOf(a, 10)
		if a.mode() != ModeConnected {
			t.Errorf("a on a link 80ms slower per call: mode %v, want connected", a.mode())
		}
		f.checkPeak(faultLimit, "with a on a slow link,")
	}
	cutOffAfter(t, slower, func(p *faultProxy) { p.slow(700 * time.Millisecond) })
}

// Redis stops answering anyone (SIGSTOP): nobody can grow, so the fleet
// keeps within its limit, and every replica falls back within its lease.
func TestAFleetWhoseRedisIsPausedFallsBackWithinItsLeases(t *testing.T) {
	s := startRedis(t)
	f := newLiveFleet(t, faultLimit, faultExpected)
	rs := []*liveReplica{f.add("a", s.addr()), f.add("b", s.addr()), f.add("c", s.addr())}
	// Runs before the replicas close: the calls Redis holds are answered.
	t.Cleanup(s.resume)
	f.split(10*time.Second, faultEach, rs...)
	f.checkPeak(faultLimit, "connected,")

	s.pause()
	f.await(10*time.Second, "the replicas never all fell back", func() bool {
		for _, r := range rs {
			if r.mode() != ModeFallback {
				return false
			}
		}
		return true
	})
	s.resume()
	for _, r := range rs {
		r.checkFellBackInTime()
	}
	f.checkPeak(faultLimit, "with Redis paused,")
	f.split(10*time.Second, faultEach, rs...)
	f.checkPeak(faultLimit, "after Redis resumed,")
}

// Redis loses the members key alone, as an evicting maxmemory policy may:
// every lease is gone, but the fleet state's birth is not. The state is
// new all the same, with its grace: a replica that rejoins first does not
// take the share of one that has not synced since, and still runs it.
func TestTheMembersKeyLostAloneStartsANewState(t *testing.T) {
	s := startRedis(t)
	p := newFaultProxy(t, s.addr())
	t.Cleanup(p.restore)
	f := newLiveFleet(t, faultLimit, 0)
	a, b := f.add("a", s.addr()), f.add("b", p.addr())
	f.split(10*time.Second, faultLimit/2, a, b)
	p.slow(60 * time.Millisecond) // b syncs at a slower pace, still connected
	f.syncsOf(b, 3)
	f.checkPeak(faultLimit, "connected,")
	admin := s.client(t)
	if err := admin.Del(context.Background(), (&Options{Prefix: "groupconc"}).membersKey()).Err(); err != nil {
		t.Fatal(err)
	}
	f.syncsOf(b, 3)
	f.syncsOf(a, 10)
	f.checkPeak(faultLimit, "after the members key was lost,")
}

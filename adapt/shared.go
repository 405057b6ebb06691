package adapt

import (
	"time"

	"github.com/kobe/groupconc"
)

// tally counts one window's samples by group, for a limit that takes the
// samples of several groups. That is the global cap. It tells overload the
// groups share from one group's own.
//
// A group is slow if its mean run time exceeds its baseline by a margin.
// It is slow too if over one sample in overShare signals overload. It
// votes once it has given minVote samples, over as many windows as that
// takes. Its vote stands while it gives samples, and up to keepVote
// windows without one. So a tenant of long calls, which ends a few in a
// window, votes too. The overload is shared if more than half the voters
// are slow, and they gave more than half the samples of the votes. The
// groups with no vote yet vote together, as one group of this window's
// samples, once they gave minVote or more. So many light tenants outvote
// one busy tenant in trouble. A window with one voter is shared by
// definition, so a group's own limit is as before.
//
// A group's baseline is the least of its votes' mean run times. It rises
// by baseDrift a window, so a backend that got slower for good is the new
// normal in time. Its zero value is ready to use. It is not safe for
// concurrent use.
type tally struct {
	e     [tallyCap]groupTally
	used  int
	last  int  // the entry of the last sample, since most come from one group
	quiet bool // whether the last window's overload was one group's
	// judged is whether a window had groups enough to vote (see close).
	judged bool
	voters int // the votes the last window judged by
}

// quietNow reports whether overload is to be taken as one group's. If more
// than one group voted in the last window judged, it says as that window
// did. Before any window was judged, or after one with a single voter, it
// is one group's while more than one group gives samples or has a vote
// standing. A tenant of long calls may end none in this window, and its
// vote stands. So one tenant's overload does not cut everyone's cap before
// its vote is counted. That holds in the first window, and where it joins
// a tenant that had the cap alone.
func (t *tally) quietNow() bool {
	switch {
	case t.quiet:
		return true
	case !t.judged:
		return t.used > 1
	case t.voters > 1:
		return false
	}
	// The groups giving samples in this window, and those whose vote
	// stands. One that joins the single voter does not speak for it.
	n := 0
	for i := range t.used {
		if t.e[i].fresh > 0 || t.e[i].weight > 0 {
			if n++; n > 1 {
				return true
			}
		}
	}
	return false
}

type groupTally struct {
	key       string
	seen, bad int     // its samples since its last vote, and their overload signals
	sum       float64 // their run times, in nanoseconds
	fresh     int     // this window's samples
	base      float64 // the least mean run time of its votes, 0 before one
	idle      int     // windows in a row it gave no sample in
	weight    int     // the samples of its vote standing; 0: none
	slow      bool    // whether that vote found it slow
}

const (
	// tallyCap bounds the groups told apart. The samples of the groups
	// past it are pooled in the last entry.
	tallyCap = 16
	// minVote is the least samples a group's vote counts.
	minVote = 5
	// keepVote is how many windows without a sample a group's vote stands.
	keepVote = 10
	// baseDrift is how much a group's baseline rises per window.
	baseDrift = 0.01
)

// voter returns whose vote s counts in: its top-level group's, so that a
// tenant that spreads its tasks over many keys votes once.
func voter(s *groupconc.LimitSample) string {
	if s.TopGroupKey != "" {
		return s.TopGroupKey
	}
	return s.GroupKey
}

// add counts one sample of the group key.
func (t *tally) add(key string, run time.Duration, sig Signal) {
	e := &t.e[t.last]
	if t.used == 0 || e.key != key {
		e = t.find(key)
	}
	e.seen++
	e.fresh++
	e.sum += float64(run)
	if sig == Overload {
		e.bad++
	}
}

// find returns the entry of key, taking an unused one, or the one idle
// longest, if key has none.
func (t *tally) find(key string) *groupTally {
	for i := range t.used {
		if t.e[i].key == key {
			t.last = i
			return &t.e[i]
		}
	}
	i := t.used
	if i < tallyCap {
		t.used++
	} else {
		i = tallyCap - 1
		for j := range tallyCap {
			if t.e[j].fresh == 0 && t.e[j].idle > t.e[i].idle {
				i = j
			}
		}
		if t.e[i].fresh > 0 {
			t.last = i // every entry is in use this window, so pool it
			return &t.e[i]
		}
	}
	t.e[i] = groupTally{key: key}
	t.last = i
	return &t.e[i]
}

// close decides on the window and starts the next. It reports whether
// the window's overload, if any, was shared. A group is slow if its mean
// run time exceeds its baseline by margin.
func (t *tally) close(margin float64) bool {
	var total, slow, groups, slowGroups int
	var light, lightSlow int // this window's samples of the groups of no vote
	for i := range t.used {
		e := &t.e[i]
		if e.fresh == 0 {
			if e.idle++; e.idle > keepVote {
				e.weight = 0
			}
		} else {
			e.idle = 0
		}
		if e.seen > 0 {
			mean := e.sum / float64(e.seen)
			isSlow := e.bad*overShare > e.seen || e.base > 0 && mean > (1+margin)*e.base
			switch {
			case e.seen >= minVote:
				e.weight, e.slow = e.seen, isSlow
				if e.bad == 0 && (e.base == 0 || mean < e.base) {
					e.base = mean
				}
				e.seen, e.bad, e.sum = 0, 0, 0
			case e.weight == 0:
				light += e.fresh
				if isSlow {
					lightSlow += e.fresh
				}
			}
		}
		if e.weight > 0 {
			groups++
			total += e.weight
			if e.slow {
				slow += e.weight
				slowGroups++
			}
		}
		e.base *= 1 + baseDrift
		e.fresh = 0
	}
	if light >= minVote { // the vote of the groups of none
		groups++
		total += light
		slow += lightSlow
		if 2*lightSlow > light {
			slowGroups++
		}
	}
	t.quiet = groups > 1 && (2*slow <= total || 2*slowGroups <= groups)
	t.judged = t.judged || groups > 0
	t.voters = groups
	return !t.quiet
}

package groupconc

import (
	"testing"
	"unsafe"

	"github.com/kobe/groupconc/internal/groupstate"
)

// TestRunnersKeepFourSparesAShard has four tasks of each shard run at once
// and stop: their records all wait as spares, none in free, and the next
// four of each shard reuse them, with no new record made.
func TestRunnersKeepFourSparesAShard(t *testing.T) {
	if n := unsafe.Sizeof(spare{}); n != 64 {
		t.Errorf("a shard's spares take %d bytes, want one cache line", n)
	}
	rs := newRunners()
	const four = 4
	var byShard [groupstate.Shards][]*task
	for _, k := range tasksInEveryShard(t, 2*four) {
		i := groupstate.ShardOf(&k.permits)
		byShard[i] = append(byShard[i], k)
	}
	take := func(round int) []*runner {
		var rr []*runner
		for _, ks := range byShard {
			for _, k := range ks[round*four : (round+1)*four] {
				rr = append(rr, rs.get(k))
			}
		}
		return rr
	}
	for round := range 2 {
		rr := take(round)
		if len(rr) != four*groupstate.Shards {
			t.Fatalf("round %d: %d records taken, want %d", round, len(rr), four*groupstate.Shards)
		}
		for _, r := range rr {
			rs.put(r)
		}
		if len(rs.free) != 0 {
			t.Errorf("round %d: %d records went to free, want all %d as spares", round, len(rs.free), len(rr))
		}
		if len(rs.all) != four*groupstate.Shards {
			t.Errorf("round %d: %d records made, want %d", round, len(rs.all), four*groupstate.Shards)
		}
	}
}

// TestRunnersLetGoOfABurstsRecords has 4 000 goroutines run tasks at once
// and stop. A snapshot reads every record, so most of theirs are let go:
// it costs what runs now, not the most that ever ran.
func TestRunnersLetGoOfABurstsRecords(t *testing.T) {
	rs := newRunners()
	ks := tasksInEveryShard(t, 4000/groupstate.Shards+1)
	rr := make([]*runner, 0, len(ks))
	for _, k := range ks {
		rr = append(rr, rs.get(k))
	}
	made := len(rs.all)
	for _, r := range rr {
		rs.put(r)
	}
	// The spares, and free as many as 3 times the records in use (the
	// spares at least), whatever the burst.
	if most := 4 * max(minFree, 4*groupstate.Shards); len(rs.all) > most {
		t.Errorf("%d records kept after a burst of %d, want at most %d", len(rs.all), made, most)
	}
	listed := map[*runner]bool{}
	for _, r := range rs.all {
		listed[r] = !r.gone
	}
	for _, r := range rs.free {
		if !listed[r] {
			t.Fatal("a free record is not among all, or was let go")
		}
	}
	for _, k := range ks[:10] { // the ones kept still serve
		rs.put(rs.get(k))
	}
}

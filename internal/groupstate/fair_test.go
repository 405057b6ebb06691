package groupstate

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func unlimitedGroup(weight int) Limits {
	return Limits{Concurrency: Unlimited, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: weight}
}

// TestFairLineGivesAFreedPermitToTheGroupWithFewestRunning: a heavy group
// that queued first does not keep a light group waiting.
func TestFairLineGivesAFreedPermitToTheGroupWithFewestRunning(t *testing.T) {
	f := newFixture(t, 2, true, fixed(unlimitedGroup(1)))
	a1, out := f.submit(t, "a", "a1")
	require.Equal(t, Admitted, out)
	a2, out := f.submit(t, "a", "a2")
	require.Equal(t, Admitted, out)
	for _, n := range []string{"a3", "a4", "a5"} {
		_, out := f.submit(t, "a", n)
		require.Equal(t, MustWait, out)
	}
	_, out = f.submit(t, "b", "b1")
	require.Equal(t, MustWait, out)
	assert.Equal(t, []string{"b1"}, f.end(t, a1), "b runs 0, a runs 1")
	assert.Equal(t, []string{"a3"}, f.end(t, a2), "both run 1: the oldest head, a3, wins the tie")
}

// TestFairLineHeadScanComesBackToAGroupThatStopsRunning: the head scan
// resumes past the tasks it passed over, whose groups run, and goes back
// to the first of a group once it runs none, ahead of younger tasks.
func TestFairLineHeadScanComesBackToAGroupThatStopsRunning(t *testing.T) {
	f := newFixture(t, 3, true, fixed(unlimitedGroup(1)))
	running := map[string]*tk{}
	for _, n := range []string{"a", "b", "c"} {
		k, out := f.submit(t, n, n+"1")
		require.Equal(t, Admitted, out)
		running[n] = k
	}
	waiting := map[string]*tk{}
	for _, n := range []string{"a2", "b2", "d1", "e1", "f1"} {
		k, out := f.submit(t, n[:1], n)
		require.Equal(t, MustWait, out)
		waiting[n] = k
	}
	q := f.gl.line.waiters.Load().disc.(*fairQueue[tk])
	assert.Equal(t, []string{"d1"}, f.end(t, running["c"]), "a and b run: passed over")
	assert.Equal(t, []string{"e1"}, f.end(t, waiting["d1"]), "resumes past b2")
	require.True(t, waiting["b2"].p.Leave(), "b2 leaves as the last passed over")
	waiting["b2"].p.Release()
	assert.Equal(t, []string{"f1"}, f.end(t, waiting["e1"]), "resumes past a2")
	g, _ := f.submit(t, "g", "g1")
	assert.Equal(t, []string{"a2"}, f.end(t, running["a"]), "a runs none: its a2 is older than g1")
	assert.False(t, q.slow, "every hand-off found by the head scan")
	assert.Equal(t, []string{"g1"}, f.end(t, running["b"]))
	for _, k := range []*tk{waiting["a2"], waiting["f1"], g} {
		assert.Empty(t, f.end(t, k))
	}
	var gs []*Group[tk]
	for _, key := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		g, _ := f.r.Lookup(key)
		gs = append(gs, g)
	}
	requireQuiet(t, f.gl, gs...)
}

// TestFairLineSharesByWeight: with weights 2 and 1, a backlogged pair of
// groups is served two to one.
func TestFairLineSharesByWeight(t *testing.T) {
	f := newFixture(t, 3, true, func(key string) Limits {
		return unlimitedGroup(map[string]int{"heavy": 2, "light": 1}[key])
	})
	var running []*tk
	for range 3 {
		k, out := f.submit(t, "x", "x")
		require.Equal(t, Admitted, out)
		running = append(running, k)
	}
	for range 6 {
		_, out := f.submit(t, "light", "light")
		require.Equal(t, MustWait, out)
		_, out = f.submit(t, "heavy", "heavy")
		require.Equal(t, MustWait, out)
	}
	var started []string
	for _, k := range running {
		started = append(started, f.end(t, k)...)
	}
	// Freed one at a time: light 0/1 and heavy 0/2 tie, light joined first;
	// then heavy 0/2 < light 1/1; then heavy 1/2 < light 1/1.
	assert.Equal(t, []string{"light", "heavy", "heavy"}, started)
}

// TestFairLineWeighsAGroupAnewInItsOrder: every waiting task's group runs,
// so the order chooses. A weight raised as tasks wait moves its group up
// in the order at once.
func TestFairLineWeighsAGroupAnewInItsOrder(t *testing.T) {
	weights := map[string]int{}
	limits := func(key string) Limits { return unlimitedGroup(max(weights[key], 1)) }
	f := newFixture(t, 4, true, limits)
	running := map[string]*tk{}
	for _, n := range []string{"a", "b", "c", "d"} {
		running[n], _ = f.submit(t, n, n+"1")
	}
	waiting := map[string]*tk{}
	for _, n := range []string{"b2", "c2", "b3", "c3"} {
		k, out := f.submit(t, n[:1], n)
		require.Equal(t, MustWait, out)
		waiting[n] = k
	}
	assert.Equal(t, []string{"b2"}, f.end(t, running["a"]), "b and c run 1 each: b2 is older")
	q := f.gl.line.waiters.Load().disc.(*fairQueue[tk])
	require.True(t, q.slow, "the order chose")
	weights["b"] = 4
	assert.Empty(t, f.r.Update(4, Unlimited, limits).Handed)
	assert.Equal(t, []string{"b3"}, f.end(t, running["d"]), "b runs 2 of weight 4, c 1 of 1")
	for _, k := range []*tk{running["b"], running["c"], waiting["b2"], waiting["b3"], waiting["c2"], waiting["c3"]} {
		f.end(t, k)
	}
	f.requireQuietKeys(t, "a", "b", "c", "d")
}

func TestFairLineLeaveAndSweepKeepTheHeapConsistent(t *testing.T) {
	f := newFixture(t, 1, true, fixed(unlimitedGroup(1)))
	holder, out := f.submit(t, "x", "x")
	require.Equal(t, Admitted, out)
	a1, _ := f.submit(t, "a", "a1")
	b1, _ := f.submit(t, "b", "b1")
	c1, _ := f.submit(t, "c", "c1")
	require.True(t, a1.p.Leave())
	assert.False(t, a1.p.Leave())
	a1.p.Release()
	gb, _ := f.r.Lookup("b")
	assert.Equal(t, []*tk{b1}, owners(f.gl.line.takeOut(gb, nil, nil)))
	b1.p.Release()
	assert.Equal(t, []string{"c1"}, f.end(t, holder))
	assert.Empty(t, f.end(t, c1))
	ga, _ := f.r.Lookup("a")
	gc, _ := f.r.Lookup("c")
	requireQuiet(t, f.gl, ga, gb, gc)
}

func TestFairLineRaisedLimitServesGroupsFairly(t *testing.T) {
	f := newFixture(t, 1, true, fixed(unlimitedGroup(1)))
	holder, _ := f.submit(t, "a", "a0")
	for _, n := range []string{"a1", "a2"} {
		f.submit(t, "a", n)
	}
	f.submit(t, "b", "b1")
	assert.Equal(t, []string{"b1", "a1"}, resume(f.r.Update(3, Unlimited, fixed(unlimitedGroup(1))).Handed))
	f.end(t, holder)
}

// bareGroups returns n groups of weight 1, in no line: enough for the
// fair order's key.
func bareGroups(n int) []*Group[tk] {
	gs := make([]*Group[tk], n)
	for i := range gs {
		gs[i] = &Group[tk]{}
		gs[i].fair = newFairGroup(gs[i], 1)
	}
	return gs
}

// TestFairHeapKeepsTheFairestOnTop checks the heap against a scan of every
// group, with equal and mixed weights, running counts near 2^63 (the
// products need 128 bits) and join seqs that wrap.
func TestFairHeapKeepsTheFairestOnTop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 64
	gs := bareGroups(n)
	var h fairHeap[tk]
	// before is less, independently: running/weight in big integers.
	before := func(a, b *fairEntry[tk]) bool {
		x := new(big.Int).Mul(big.NewInt(a.running), big.NewInt(b.weight))
		y := new(big.Int).Mul(big.NewInt(b.running), big.NewInt(a.weight))
		if c := x.Cmp(y); c != 0 {
			return c < 0
		}
		return int32(a.seq-b.seq) < 0
	}
	key := func(g *Group[tk]) fairEntry[tk] {
		var e fairEntry[tk]
		e.load(g)
		return e
	}
	seq := uint32(math.MaxUint32 - 500)
	for range 5000 {
		g := gs[rng.IntN(n)]
		q := g.fair
		small := func() int64 { return 1 + rng.Int64N(3) }
		big := func() int64 { return math.MaxInt64 - rng.Int64N(3) }
		switch rng.IntN(4) {
		case 0, 3:
			q.running.Store([]int64{0, small(), small(), big()}[rng.IntN(4)])
		case 1:
			q.weight.Store([]int64{1, small(), big()}[rng.IntN(3)])
		case 2:
			q.seq = seq
			seq++
		}
		switch {
		case q.index < 0:
			h.push(g)
		case rng.IntN(4) == 0 || q.running.Load() == 0 && rng.IntN(2) == 0:
			h.remove(q.index)
		default:
			h.fix(q.index)
		}
		for i := range h {
			require.Equal(t, i, h[i].g.fair.index)
			require.Equal(t, key(h[i].g), h[i], "entry %d holds a stale key", i)
		}
		for i := 1; i < len(h); i++ {
			require.False(t, before(&h[i], &h[0]), "entry %d goes before the top", i)
		}
	}
}

// TestFairEntryLessIsExact compares less with running/weight in big
// integers, over values whose products need 128 bits.
func TestFairEntryLessIsExact(t *testing.T) {
	runs := []int64{0, 1, 2, 3, math.MaxInt64 - 2, math.MaxInt64 - 1, math.MaxInt64}
	weights := []int64{1, 2, 3, math.MaxInt64 - 1, math.MaxInt64}
	seqs := []uint32{0, 1, math.MaxUint32}
	var es []fairEntry[tk]
	for _, r := range runs {
		for _, w := range weights {
			for _, s := range seqs {
				es = append(es, fairEntry[tk]{running: r, weight: w, seq: s})
			}
		}
	}
	for _, a := range es {
		for _, b := range es {
			x := new(big.Int).Mul(big.NewInt(a.running), big.NewInt(b.weight))
			y := new(big.Int).Mul(big.NewInt(b.running), big.NewInt(a.weight))
			want := x.Cmp(y) < 0 || x.Cmp(y) == 0 && int32(a.seq-b.seq) < 0
			require.Equal(t, want, a.less(&b), "%+v before %+v", a, b)
		}
	}
}

// TestFairOrderKeepsTheFairestFirst checks fairOrder against a scan of
// every group, through adds, removes and fixes: weights that differ,
// running counts that grow and shrink, heads that join newest or earlier.
func TestFairOrderKeepsTheFairestFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 24
	gs := bareGroups(n)
	var o fairOrder[tk]
	in := make(map[*Group[tk]]bool)
	seq := uint32(math.MaxUint32 - 3000) // wraps
	used := make(map[uint32]bool)        // seqs are unique
	setHead := func(q *fairGroup[tk]) {
		s := seq // mostly the newest; else one that joined earlier
		if rng.IntN(4) == 0 {
			s = seq - uint32(1+rng.IntN([]int{4, 4, 4, 4, 4, 4, 4, 400}[rng.IntN(8)]))
			for used[s] {
				s--
			}
		}
		used[s] = true
		seq++
		q.seq = s
	}
	for i := range 8000 {
		if i%400 == 0 { // a busy period ends
			for g := range in {
				o.remove(g)
				delete(in, g)
			}
		}
		g := gs[rng.IntN(n)]
		q := g.fair
		switch {
		case !in[g]:
			q.running.Store(rng.Int64N(4))
			q.weight.Store(1)
			setHead(q)
			o.add(g)
			in[g] = true
		case rng.IntN(5) == 0:
			o.remove(g)
			delete(in, g)
		default:
			switch c := rng.IntN(200); {
			case c == 0:
				q.weight.Store(2)
			case c == 1:
				q.running.Store(63 + rng.Int64N(3))
			case c < 60:
				setHead(q)
			default:
				q.running.Store(max(0, q.running.Load()+rng.Int64N(3)-1))
			}
			o.fix(g)
		}
		require.Equal(t, len(in), o.len())
		got := o.appendTo(nil)
		require.Len(t, got, len(in))
		for _, h := range got {
			require.True(t, in[h], "a group taken out is still in order")
		}
		if len(in) == 0 {
			continue
		}
		var best *Group[tk]
		var bestKey fairEntry[tk]
		for h := range in {
			var k fairEntry[tk]
			k.load(h)
			if best == nil || k.less(&bestKey) {
				best, bestKey = h, k
			}
		}
		require.Same(t, best, o.first())
	}
}

// appendTo appends every group in o to gs: the tests read the order
// through it.
func (o *fairOrder[T]) appendTo(gs []*Group[T]) []*Group[T] {
	for i := range o.heap {
		gs = append(gs, o.heap[i].g)
	}
	return gs
}

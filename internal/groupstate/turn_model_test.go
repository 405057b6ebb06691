package groupstate

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTurnsMatchAModelAsTasksComeAndGo drives a group's turns with random
// steps: a fresh walk or a handed task parks, the walker passes its turn
// on, or a pause takes the fresh walks out. A slow model keeps the parked
// tasks. After each step the turn must go to the one the model serves
// first, and the turn's count must be the walker and those parked. So the
// search's starting point (turns.last) is never a task gone from the list.
func TestTurnsMatchAModelAsTasksComeAndGo(t *testing.T) {
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 5))
		f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: Unlimited, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
		var all []*tk
		enter := func() *tk {
			k := &tk{name: "k"}
			f.r.Enter("g", &k.p, k, r.Int64N(1000)) // a task may be older than those parked
			k.p.SetPriority(uint8(r.IntN(3)))
			all = append(all, k)
			return k
		}
		require.True(t, enter().p.tryTurn())
		g, _ := f.r.Lookup("g")
		turns := g.turns.Load()
		var parked []*Permits[tk] // the model: who waits for the turn
		for step := range 60 {
			switch op := r.IntN(8); {
			case op < 3:
				k := enter()
				require.True(t, k.p.waitTurn(), "seed %d step %d", seed, step)
				parked = append(parked, &k.p)
			case op < 5:
				k := enter()
				require.False(t, k.p.takeTurn(), "seed %d step %d", seed, step)
				parked = append(parked, &k.p)
			case op < 7:
				got := g.passTurn()
				if len(parked) == 0 {
					require.Nil(t, got, "seed %d step %d", seed, step)
					require.Zero(t, turns.n.Load(), "seed %d step %d", seed, step)
					require.True(t, enter().p.tryTurn())
					break
				}
				first := slices.MinFunc(parked, compareServed[tk])
				require.Same(t, first, got, "seed %d step %d", seed, step)
				require.Equal(t, got.turnAt(), turns.n.Load()&^turnCount, "seed %d step %d: where the walker was handed", seed, step)
				parked = slices.DeleteFunc(parked, func(p *Permits[tk]) bool { return p == got })
			default:
				out := g.takeOutTurns(nil)
				var fresh []*Permits[tk]
				parked = slices.DeleteFunc(parked, func(p *Permits[tk]) bool {
					if p.bit == turnBit {
						fresh = append(fresh, p)
						return true
					}
					return false
				})
				require.ElementsMatch(t, fresh, out, "seed %d step %d", seed, step)
			}
			require.Equal(t, uint64(1+len(parked)), turns.n.Load()&turnCount, "seed %d step %d: the walker and those parked", seed, step)
		}
		for g.passTurn() != nil {
		}
		require.Zero(t, turns.n.Load())
		for _, k := range all {
			k.p.Exit()
		}
	}
}

// TestTurnPassedAsAPauseTakesItsOnlyWaiterOut races the walker's passTurn
// with a pause taking out the one fresh walk waiting for the turn. Either
// the walk gets the turn, or the pause takes it and nobody has the turn
// after: a count left over would make the group's next walk wait for ever.
func TestTurnPassedAsAPauseTakesItsOnlyWaiterOut(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: Unlimited, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	for round := range 50000 {
		walker, fresh := &tk{name: "walker"}, &tk{name: "fresh"}
		f.r.Enter("g", &walker.p, walker, 0)
		f.r.Enter("g", &fresh.p, fresh, 1)
		g, _ := f.r.Lookup("g")
		require.True(t, walker.p.tryTurn())
		require.True(t, fresh.p.waitTurn())
		start := make(chan struct{})
		passed, out := make(chan *Permits[tk]), make(chan []*Permits[tk])
		go func() { <-start; passed <- g.passTurn() }()
		go func() { <-start; out <- g.takeOutTurns(nil) }()
		close(start)
		got, taken := <-passed, <-out
		n := g.turns.Load().n.Load()
		if got == nil {
			require.Len(t, taken, 1, "round %d", round)
			require.Zero(t, n, "round %d: nobody has the turn", round)
		} else {
			require.Empty(t, taken, "round %d", round)
			require.Equal(t, uint64(1), n&turnCount, "round %d: fresh has the turn", round)
			require.Nil(t, g.passTurn())
		}
		walker.p.Exit()
		fresh.p.Exit()
	}
}

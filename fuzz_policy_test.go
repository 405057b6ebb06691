package groupconc_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// FuzzPolicyBuilder: every combination of settings builds a policy obeying
// the resolution rules (concurrency >= 1, in-flight >= 1, queue >= 0,
// weight >= 1; map, then resolver, then default) or returns an error
// wrapping ErrInvalidPolicy that names each bad field, and never panics.
// set is a bit mask of which settings are applied.
func FuzzPolicyBuilder(f *testing.F) {
	const m = math.MaxInt
	f.Add(uint32(0), 0, 0, 0, 0, 0, "a", 0, 0, 0, 0, 0, int64(0), 0, int64(0), int64(0))
	f.Add(uint32(0xffff), 2, 3, 4, 1, 5, "a", 3, -7, 1, 1, 2, int64(time.Second), 1, int64(0), int64(-1))
	f.Add(uint32(0x1ff), 0, -1, 1, -1, 0, "", 1, 0, 2, 0, 0, int64(0), 0, int64(0), int64(0))
	f.Add(uint32(0x0ff), m, m, m, m, m, "k", m, math.MinInt, 0, 0, m, int64(math.MaxInt64), m, int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add(uint32(0x3ff), 1, 1, 1, 0, 0, "x", 0, 0, 9, 0, 0, int64(0), 0, int64(0), int64(0))
	f.Add(uint32(0x1e1), 3, 1, 2, 0, 1, "k", 2, 4, 2, 0, 0, int64(0), 0, int64(0), int64(0))
	// fair share with weights, an idle TTL and pressure warnings
	f.Add(uint32(0xfc06), 1, 4, 2, 0, 3, "a", 2, 3, 0, 1, 2, int64(time.Minute), 10, int64(time.Second), int64(0))
	// weights without fair share; a global queue threshold under it
	f.Add(uint32(0x2800), 1, 1, 1, 0, 0, "a", 1, 1, 0, 0, 1, int64(0), 0, int64(0), int64(0))
	f.Add(uint32(0x0408), 1, 1, 1, 5, 0, "a", 1, 1, 0, 1, 1, int64(0), 0, int64(0), int64(0))
	// an unknown mode, a negative TTL, negative pressure fields
	f.Add(uint32(0xc400), 1, 1, 1, 0, 0, "a", 1, 1, 0, 7, 1, int64(-1), -1, int64(-time.Second), int64(-1))
	// RejectDiscardOldest; an empty ParentSeparator, then a separator
	f.Add(uint32(0x20200), 0, 0, 0, 0, 0, "", 0, 0, 3, 0, 0, int64(0), 0, int64(0), int64(0))
	f.Add(uint32(0x20200), 0, 0, 0, 0, 0, "/", 0, 0, 3, 0, 0, int64(0), 0, int64(0), int64(0))
	f.Fuzz(func(t *testing.T, set uint32, conc, global, inflight, gqueue, queue int, mapKey string, mapVal, resolved, rejection int,
		mode, weight int, ttl int64, backlogCount int, backlogAge, cooldown int64,
	) {
		has := func(bit int) bool { return set&(1<<bit) != 0 }
		b := groupconc.NewPolicyBuilder()
		var bad []string // the fields a refusal must name
		need := func(ok bool, fields ...string) {
			if !ok {
				bad = append(bad, fields...)
			}
		}
		concMap := map[string]int{mapKey: mapVal}
		inflightMap := map[string]int{mapKey: mapVal}
		queueMap := map[string]int{mapKey: mapVal}
		weightMap := map[string]int{mapKey: weight}
		resolverPanics := resolved%5 == 0
		resolver := func(string) int {
			if resolverPanics {
				panic("resolver boom")
			}
			return resolved
		}
		if has(0) {
			b.DefaultMaxConcurrencyPerGroup(conc)
			need(conc >= 1, "DefaultMaxConcurrencyPerGroup")
		}
		if has(1) {
			b.GlobalMaxInFlight(global)
			need(global >= 1, "GlobalMaxInFlight")
		}
		if has(2) {
			b.DefaultMaxInFlightPerGroup(inflight)
			need(inflight >= 1, "DefaultMaxInFlightPerGroup")
		}
		if has(3) {
			b.GlobalQueueThreshold(gqueue)
			need(gqueue >= 0, "GlobalQueueThreshold")
		}
		if has(4) {
			b.DefaultQueueThresholdPerGroup(queue)
			need(queue >= 0, "DefaultQueueThresholdPerGroup")
		}
		if has(5) {
			b.PerGroupMaxConcurrency(concMap)
			need(mapVal >= 1 && mapKey != "", "PerGroupMaxConcurrency")
		}
		if has(6) {
			b.PerGroupMaxInFlight(inflightMap)
			need(mapVal >= 1 && mapKey != "", "PerGroupMaxInFlight")
		}
		if has(7) {
			b.PerGroupQueueThreshold(queueMap)
			need(mapVal >= 0 && mapKey != "", "PerGroupQueueThreshold")
		}
		if has(8) {
			b.ConcurrencyResolver(resolver)
		}
		if has(9) {
			b.RejectionPolicy(groupconc.RejectionPolicy(rejection))
			need(rejection >= int(groupconc.RejectAbort) && rejection <= int(groupconc.RejectDiscardOldest), "RejectionPolicy")
		}
		isolation := groupconc.IsolationOff
		if has(10) {
			isolation = groupconc.IsolationMode(mode)
			b.Isolation(isolation)
			need(isolation == groupconc.IsolationOff || isolation == groupconc.IsolationFairShare, "Isolation")
		}
		if has(11) {
			b.PerGroupWeight(weightMap)
			need(weight >= 1 && mapKey != "", "PerGroupWeight")
		}
		if has(12) {
			b.WeightResolver(resolver)
		}
		if has(13) {
			b.DefaultWeightPerGroup(weight)
			need(weight >= 1, "DefaultWeightPerGroup")
		}
		weighted := has(11) || has(12) || has(13)
		if weighted && isolation == groupconc.IsolationOff {
			need(false, "Isolation", "Weight")
		}
		if isolation == groupconc.IsolationFairShare && has(3) && gqueue != groupconc.Unlimited {
			need(false, "GlobalQueueThreshold", "Isolation")
		}
		if has(14) {
			b.IdleGroupTTL(time.Duration(ttl))
			need(ttl >= 0, "IdleGroupTTL")
		}
		pressure := groupconc.PressureConfig{BacklogCount: backlogCount, BacklogAge: time.Duration(backlogAge), Cooldown: time.Duration(cooldown)}
		if has(15) {
			var fn func(groupconc.PressureWarning)
			if has(16) {
				fn = func(groupconc.PressureWarning) {}
			}
			b.PressureWarnings(pressure, fn)
			need(backlogCount >= 0, "BacklogCount")
			need(backlogAge >= 0, "BacklogAge")
			need(cooldown >= 0, "Cooldown")
		}
		if has(17) {
			b.ParentSeparator(mapKey)
			need(mapKey != "", "ParentSeparator")
		}
		var p *groupconc.GroupPolicy
		var err error
		require.NotPanics(t, func() { p, err = b.Build() })
		// The builder copied the maps: changing them now changes nothing.
		concMap[mapKey], inflightMap[mapKey], queueMap[mapKey], weightMap[mapKey] = -100, -100, -100, -100
		if len(bad) > 0 {
			require.Error(t, err, "an invalid setting must be refused: %v", bad)
			require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
			require.Nil(t, p)
			for _, field := range bad {
				assert.Contains(t, err.Error(), field, "the error names each bad field")
			}
			return
		}
		require.NoError(t, err)
		require.NotNil(t, p)
		defConc := 1
		if has(0) {
			defConc = conc
		}
		defWeight := 1
		if has(13) {
			defWeight = weight
		}
		for _, k := range []string{mapKey, mapKey + "-other", "z"} {
			var got int
			require.NotPanics(t, func() { got = p.ResolveConcurrency(k) })
			require.GreaterOrEqual(t, got, 1)
			switch {
			case has(5) && k == mapKey:
				require.Equal(t, mapVal, got, "map first")
			case has(8) && !resolverPanics:
				require.Equal(t, max(resolved, 1), got, "then the resolver, at least 1")
			default:
				require.Equal(t, defConc, got, "then the default")
			}
			inf := p.ResolveMaxInFlight(k)
			require.GreaterOrEqual(t, inf, 1)
			switch {
			case has(6) && k == mapKey:
				require.Equal(t, mapVal, inf)
			case has(2):
				require.Equal(t, inflight, inf)
			default:
				require.Equal(t, groupconc.Unlimited, inf)
			}
			q := p.ResolveQueueThreshold(k)
			require.GreaterOrEqual(t, q, 0)
			switch {
			case has(7) && k == mapKey:
				require.Equal(t, mapVal, q)
			case has(4):
				require.Equal(t, queue, q)
			default:
				require.Equal(t, groupconc.Unlimited, q)
			}
			require.NotPanics(t, func() { got = p.ResolveWeight(k) })
			require.GreaterOrEqual(t, got, 1)
			switch {
			case has(11) && k == mapKey:
				require.Equal(t, weight, got, "weight: map first")
			case has(12) && !resolverPanics:
				require.Equal(t, max(resolved, 1), got, "weight: then the resolver, at least 1")
			default:
				require.Equal(t, defWeight, got, "weight: then the default")
			}
		}
		require.GreaterOrEqual(t, p.GlobalMaxInFlight(), 1)
		require.GreaterOrEqual(t, p.GlobalQueueThreshold(), 0)
		if has(1) {
			require.Equal(t, global, p.GlobalMaxInFlight())
		}
		if has(3) {
			require.Equal(t, gqueue, p.GlobalQueueThreshold())
		}
		require.Equal(t, isolation, p.Isolation())
		if isolation == groupconc.IsolationFairShare {
			require.Equal(t, groupconc.Unlimited, p.GlobalQueueThreshold(), "fair share leaves the global queue unbounded")
		}
		wantTTL := time.Duration(0)
		if has(14) {
			wantTTL = time.Duration(ttl)
		}
		require.Equal(t, wantTTL, p.IdleGroupTTL())
	})
}

package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A limit of 6 holds one task of cost 4, and the next waits: the limit is
// as full as the costs let it be. A sample of a task that started then
// says so. Its Running is the limit, though 4 permits are held, so an
// algorithm that raises only a busy limit raises it. The same holds for
// the global cap.
func TestASampleCountsALimitThatHoldsACostlyTaskBackAsFull(t *testing.T) {
	for _, global := range []bool{false, true} {
		t.Run(map[bool]string{false: "group", true: "global"}[global], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := new(script)
				b := adaptiveGroups(s, 6, 1, 0)
				if global {
					b = groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
						DefaultMaxConcurrencyPerGroup(64).GlobalMaxInFlight(6).
						AdaptiveGlobal(groupconc.AdaptiveConfig{New: s.new})
				}
				e := groupconc.New(mustBuild(t, b))
				defer e.Close()
				gates := make([]chan struct{}, 3)
				var hs []*groupconc.TaskHandle[int]
				for i := range gates {
					gates[i] = make(chan struct{})
					h, err := groupconc.SubmitWith(t.Context(), e, "g", "t", gated(gates[i], i), groupconc.SubmitOptions{Cost: 4})
					require.NoError(t, err)
					hs = append(hs, h)
					synctest.Wait()
				}
				close(gates[0]) // the second starts with the third waiting
				synctest.Wait()
				close(gates[1])
				close(gates[2])
				for _, h := range hs {
					h.Wait()
				}
				got := s.taken()
				require.Len(t, got, 3)
				assert.Equal(t, 4, got[0].Running, "the first started alone, nothing waiting")
				assert.Equal(t, 6, got[1].Running, "the second started with the third held back by the limit")
				assert.Equal(t, 6, got[1].Limit)
			})
		})
	}
}

package groupconc_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// A key's group evicted and made again is a new group: its first backlog
// warns, whatever the old group's cooldown, and carries none of the old
// group's suppressed warnings.
func TestAGroupMadeAgainAfterAnEvictionHasACooldownOfItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []groupconc.PressureWarning
		p := mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).
			PressureWarnings(groupconc.PressureConfig{BacklogCount: 1, BacklogAge: time.Hour, Cooldown: time.Minute},
				func(w groupconc.PressureWarning) { mu.Lock(); got = append(got, w); mu.Unlock() }))
		e := groupconc.New(p)
		defer e.Close()
		gate := make(chan struct{})
		held := func(ctx context.Context) (int, error) {
			select {
			case <-gate:
			case <-ctx.Done():
			}
			return 0, nil
		}
		var hs []*groupconc.TaskHandle[int]
		for range 3 { // the second warns, the third is held back by the cooldown
			hs = append(hs, submit(t, t.Context(), e, "a", "t", held))
		}
		synctest.Wait()
		e.EvictGroup("a")
		for _, h := range hs {
			h.Wait()
		}
		for range 2 {
			hs = append(hs, submit(t, t.Context(), e, "a", "t", held))
		}
		synctest.Wait()
		mu.Lock()
		ws := append([]groupconc.PressureWarning(nil), got...)
		mu.Unlock()
		if assert.Len(t, ws, 2, "a warning for each group of key a") {
			assert.Zero(t, ws[1].Suppressed, "the new group's own count")
		}
		close(gate)
		for _, h := range hs {
			h.Wait()
		}
	})
}

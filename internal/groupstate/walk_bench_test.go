package groupstate

import (
	"context"
	"testing"
)

// BenchmarkWalk walks one task at a time through the layers of a group of
// limit 4 under IsolationOff, and back: Enter, Try, Release, Exit, the
// layers' part of a Do that need not wait. Its layers are always free, so
// a plain task takes and gives them back on the fast paths (fast.go). With
// shape=parent the group is a tenant's user, and the task has an Ext.
func BenchmarkWalk(b *testing.B) {
	for _, shape := range []string{"plain", "parent"} {
		b.Run("shape="+shape, func(b *testing.B) {
			limits := Limits{Concurrency: 4, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}
			gl := NewGlobal[xtk](64, Unlimited, false)
			gl.SetExt(func(t *xtk) *Ext { return &t.x })
			r := NewRegistry(context.Background(), gl, fixed(limits), func() int64 { return 0 })
			r.SetParents(slashParents, nil)
			key := "u"
			if shape == "parent" {
				key = "t/u"
			}
			var t xtk
			b.ReportAllocs()
			for b.Loop() {
				t = xtk{}
				r.Enter(key, &t.p, &t, 0)
				if t.p.NeedsExt(1) {
					t.p.Extend(&t.x, 1)
				}
				if out, _ := t.p.Try(); out != Admitted {
					b.Fatal(out)
				}
				t.p.Release()
				t.p.Exit()
			}
		})
	}
}

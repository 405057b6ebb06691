package promgc_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

// BenchmarkListenerOnCompleted measures the listener's own cost per task,
// called from every CPU at once, without an executor: OnCompleted for a task
// that waited and ran, with the group label off and on.
func BenchmarkListenerOnCompleted(b *testing.B) {
	for _, grouped := range []bool{false, true} {
		b.Run(fmt.Sprint("grouped=", grouped), func(b *testing.B) {
			o := promgc.Options{}
			if grouped {
				o.GroupClass = tier
			}
			m, err := promgc.New(o)
			if err != nil {
				b.Fatal(err)
			}
			l := m.Listener()
			now := time.Now()
			r := groupconc.GroupResult[any]{
				GroupKey: "gold-1", TaskID: "t", Status: groupconc.StatusSuccess,
				Submitted: now, Start: now.Add(3 * time.Millisecond), End: now.Add(5 * time.Millisecond),
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.OnCompleted("gold-1", "t", r)
				}
			})
		})
	}
}

package adapt_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A cold start at a load just over the capacity of 16 servers: 1.05 and
// 1.1 times it. A queue builds in the backend slowly, so the limit does
// not fill at first, and Gradient's probe measures the baseline at light
// load. It took a run time that climbed with that queue for the baseline,
// and held the limit at its maximum. Then nearly no task met its
// deadline: seeds 1 and 2 at 1.05 kept under 20/s of a fixed limit's
// 790/s, and seed 3 at 1.1 kept 27/s.
func TestScenarioFCFSColdStartJustOverCapacity(t *testing.T) {
	skipSlow(t)
	var b strings.Builder
	b.WriteString("FCFS, a cold start at 64 just over the capacity of 16 servers, from 3 s on\n| setup | load | seed | goodput | best fixed (limit) | ratio |\n|---|---|---|---|---|---|\n")
	for _, seed := range fcfsSeeds {
		for _, load := range []float64{1.05, 1.1} {
			sc := fcfsScenario("near", 16, load*16/fcfsService.Seconds(), callsWait, 8*time.Second, seed)
			sc.phases = []phase{{"3-8 s", 3 * time.Second, 8 * time.Second, 0}}
			for _, v := range againstFixed(t, sc, []setup{fcfsGradient, fcfsAIMD}, []int{12, 16, 20}) {
				ratio := v.got.goodput / v.best.goodput
				fmt.Fprintf(&b, "| %s | %.2f× | %d | %.0f/s | %.0f/s (%d) | %.3f |\n", v.setup, load, seed, v.got.goodput, v.best.goodput, v.bestN, ratio)
				// Gradient's limit at 1.1, seed 2, settles low: 0.79.
				if ratio < 0.75 {
					t.Errorf("%s, %.2f× the capacity, seed %d: goodput %.0f/s, want >= 0.75 × the best fixed limit's %.0f/s", v.setup, load, seed, v.got.goodput, v.best.goodput)
				}
			}
		}
	}
	t.Log("\n" + b.String())
}

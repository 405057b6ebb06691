package benchmarks

import (
	"context"
	"testing"
	"unsafe"

	"github.com/kobe/groupconc"
)

// BenchmarkW3HotPrioritiesFloor is W3HotGroupPriorities for floorLine, the
// least an executor can do with five priorities: how much of what a shape
// costs groupconc comes with the shape itself.
func BenchmarkW3HotPrioritiesFloor(b *testing.B) {
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	tasks := make([]*floorTask, w3Tasks)
	run := func(shape int, l *floorLine, n int) {
		for i := range n {
			prio := priorityShapes[shape].prio(i, n) - groupconc.PriorityHighest
			tasks[i] = l.Submit(ctx, uint8(prio), fn)
		}
		for _, t := range tasks[:n] {
			t.Wait()
		}
	}
	names := make([]string, len(priorityShapes))
	for i, s := range priorityShapes {
		names[i] = s.name
	}
	takeTurns(b, names, 16, w3Tasks, func(shape, _ int) func() {
		l := new(floorLine)
		run(shape, l, 1000)
		return func() { run(shape, l, w3Tasks) }
	}, nil)
}

// TestFloorTaskIsTheSizeOfGroupconcs: the floor's tasks take the size class
// of groupconc's, so that the two lay their tasks alike in memory.
func TestFloorTaskIsTheSizeOfGroupconcs(t *testing.T) {
	if s := unsafe.Sizeof(floorTask{}); s <= 128 || s > 144 {
		t.Errorf("floorTask is %d bytes, want 129-144 (the 144-byte size class)", s)
	}
}

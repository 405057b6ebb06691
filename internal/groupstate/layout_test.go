package groupstate

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/kobe/groupconc/internal/layout"
)

// TestLayoutTable lists, field by field, where the bytes of a group and of
// a waiting task's Permits go, padding included, with the size class the
// allocator rounds each separately allocated struct up to. Read it with
//
//	go test -run TestLayoutTable -v ./internal/groupstate
//
// It fails if a table does not account for every byte of its struct, or
// if benchmarks/MEMORY.md does not quote it as it is.
func TestLayoutTable(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the tables are for 64-bit platforms")
	}
	for _, v := range []any{
		Group[tk]{}, line[tk]{}, waiters[tk]{}, slots[tk]{}, Limits{}, scope{},
		Permits[tk]{},
	} {
		typ := reflect.TypeOf(v)
		rows := layout.Rows(typ, typ.PkgPath())
		if err := layout.Check(typ, rows); err != nil {
			t.Error(err)
		}
		table := layout.Table(typ, rows)
		t.Logf("\n%s", table)
		if err := layout.Quoted("../../benchmarks/MEMORY.md", table); err != nil {
			t.Error(err)
		}
	}
}

// TestPermitsLayout guards the size of a task's Permits, the part of a
// waiting task this package keeps: with the caller's 72 bytes it makes a
// queued task 144 bytes, a size class of the allocator on 64-bit platforms
// (BenchmarkW3QueuedMemory of the benchmarks module).
func TestPermitsLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes checked on 64-bit platforms only")
	}
	if n := unsafe.Sizeof(Permits[tk]{}); n > 72 {
		t.Errorf("Permits is %d bytes, want at most 72", n)
	}
}

// TestKinCountsShareALine guards the layout kin's doc comment relies on:
// the counts written as tasks start and end in its first 64 bytes, and a
// size in the 192-byte class, whose objects start on a cache line.
func TestKinCountsShareALine(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes checked on 64-bit platforms only")
	}
	var k kin[tk]
	if end := unsafe.Offsetof(k.owed) + unsafe.Sizeof(k.owed); end > 64 {
		t.Errorf("kin's counts end at byte %d, want at most 64", end)
	}
	if n := unsafe.Sizeof(k); n <= 176 || n > 192 {
		t.Errorf("kin is %d bytes, want 177 to 192 (the 192-byte size class)", n)
	}
}

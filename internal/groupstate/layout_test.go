package groupstate

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unsafe"
)

// TestLayoutTable lists, field by field, where the bytes of a group and of
// a waiting task's Permits go, padding included, with the size class the
// allocator rounds each separately allocated struct up to. Read it with
//
//	go test -run TestLayoutTable -v ./internal/groupstate
//
// (benchmarks/MEMORY.md quotes it). It fails if a table does not account
// for every byte of its struct.
func TestLayoutTable(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the tables are for 64-bit platforms")
	}
	for _, v := range []any{
		Group[tk]{}, line[tk]{}, slots[tk]{}, Limits{}, scope{},
		Permits[tk]{},
	} {
		typ := reflect.TypeOf(v)
		rows := layoutRows(typ, "", 0)
		var sum uintptr
		for i, r := range rows {
			if r.off != sum {
				t.Errorf("%s: row %d (%s) at offset %d, want %d", shortType(typ), i, r.name, r.off, sum)
			}
			sum += r.size
		}
		if sum != typ.Size() {
			t.Errorf("%s: rows add up to %d bytes, want %d", shortType(typ), sum, typ.Size())
		}
		t.Logf("\n%s", layoutTable(typ, rows))
	}
}

// layoutRow is a field, or the padding after one.
type layoutRow struct {
	off, size uintptr
	name, typ string
}

// layoutRows lists typ's fields from offset base on, with the padding
// between and after them. Fields whose type is a struct of this package
// are listed field by field, with dotted names.
func layoutRows(typ reflect.Type, prefix string, base uintptr) []layoutRow {
	var rows []layoutRow
	end := base
	for i := range typ.NumField() {
		f := typ.Field(i)
		off := base + f.Offset
		if off > end {
			rows = append(rows, layoutRow{off: end, size: off - end, name: "(padding)"})
		}
		name := prefix + f.Name
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == typ.PkgPath() && f.Type.NumField() > 0 {
			rows = append(rows, layoutRows(f.Type, name+".", off)...)
		} else {
			rows = append(rows, layoutRow{off: off, size: f.Type.Size(), name: name, typ: shortType(f.Type)})
		}
		end = off + f.Type.Size()
	}
	if last := base + typ.Size(); last > end {
		rows = append(rows, layoutRow{off: end, size: last - end, name: "(padding)"})
	}
	return rows
}

// shortType is t's name without package paths, and without this
// package's name.
func shortType(t reflect.Type) string {
	return strings.ReplaceAll(pkgPath.ReplaceAllString(t.String(), ""), "groupstate.", "")
}

var pkgPath = regexp.MustCompile(`[\w.-]+(/[\w.-]+)*/`)

// layoutTable renders rows as a Markdown table headed by typ's size and
// size class.
func layoutTable(typ reflect.Type, rows []layoutRow) string {
	var b strings.Builder
	size := typ.Size()
	fmt.Fprintf(&b, "%s: %d bytes, size class %d\n\n", shortType(typ), size, sizeClass(size))
	b.WriteString("| offset | size | field | type |\n|---:|---:|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %d | %s | %s |\n", r.off, r.size, r.name, r.typ)
	}
	return b.String()
}

// sizeClasses are the Go allocator's small size classes, up to 1 KiB.
var sizeClasses = []uintptr{
	8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224,
	240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768,
	896, 1024,
}

// sizeClass returns the bytes the allocator hands out for an object of
// size bytes (0 beyond the table).
func sizeClass(size uintptr) uintptr {
	for _, c := range sizeClasses {
		if size <= c {
			return c
		}
	}
	return 0
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

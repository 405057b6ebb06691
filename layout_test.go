package groupconc_test

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/internal/layout"
)

// TestHandleLayout lists, field by field and padding included, the handle
// every Submit allocates and every waiting task is (the layouts of the
// group's own structs are internal/groupstate's TestLayoutTable). It fails
// if the table does not account for every byte, or if benchmarks/MEMORY.md
// does not quote it as it is.
//
//	go test -run TestHandleLayout -v .
func TestHandleLayout(t *testing.T) {
	if strconv.IntSize != 64 {
		t.Skip("the table is for 64-bit platforms")
	}
	typ := reflect.TypeFor[groupconc.TaskHandle[struct{}]]()
	rows := layout.Rows(typ, "github.com/kobe/groupconc")
	if err := layout.Check(typ, rows); err != nil {
		t.Error(err)
	}
	table := layout.Table(typ, rows)
	t.Logf("\n%s", table)
	if err := layout.Quoted("benchmarks/MEMORY.md", table); err != nil {
		t.Error(err)
	}
}

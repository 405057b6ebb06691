package layout

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The fields are read only through reflection.
type inner struct {
	A uint8
	B uint32
}

type outer struct {
	X  uint8
	In inner
	Y  uint16
}

func TestRowsListEveryByteWithPadding(t *testing.T) {
	typ := reflect.TypeFor[outer]()
	rows := Rows(typ, typ.PkgPath())
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	assert.Equal(t, []string{"X", "(padding)", "In.A", "(padding)", "In.B", "Y", "(padding)"}, names)
	require.NoError(t, Check(typ, rows))
	assert.Error(t, Check(typ, rows[1:]), "a missing row is found")
	assert.Error(t, Check(typ, rows[:len(rows)-1]), "a missing tail is found")
	assert.Contains(t, Table(typ, rows), "layout.outer: 16 bytes, size class 16")
}

func TestSizeClass(t *testing.T) {
	assert.Equal(t, uintptr(144), SizeClass(137))
	assert.Equal(t, uintptr(352), SizeClass(352))
	assert.Zero(t, SizeClass(4096))
}

func TestShortNameDropsPackagePaths(t *testing.T) {
	assert.Equal(t, "groupstate.Group[groupconc.task]",
		ShortName("github.com/kobe/groupconc/internal/groupstate.Group[github.com/kobe/groupconc.task]"))
	assert.Equal(t, "atomic.Pointer[groupconc.task]", ShortName("sync/atomic.Pointer[github.com/kobe/groupconc.task]"))
	assert.Equal(t, "map[string]*layout.x_y", ShortName("map[string]*a-b.c/layout.x_y"))
}

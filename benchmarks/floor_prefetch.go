//go:build amd64

package benchmarks

import "unsafe"

// prefetch asks the processor to fetch the first, second and last cache
// lines of the size bytes at p, as groupconc's lines do (floor_amd64.s).
//
//go:noescape
func prefetch(p unsafe.Pointer, size uintptr)

//go:build amd64

package benchmarks

import "unsafe"

// prefetch asks the processor to fetch the first, second and last cache
// lines of the size bytes at p (floor_amd64.s). It is a copy of
// internal/groupstate's, which this module may not import, so that the
// floor fetches ahead exactly as groupconc's lines do.
//
//go:noescape
func prefetch(p unsafe.Pointer, size uintptr)

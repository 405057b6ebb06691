//go:build !amd64

package benchmarks

import "unsafe"

// prefetch does nothing where floorLine has no assembly for it.
func prefetch(unsafe.Pointer, uintptr) {}

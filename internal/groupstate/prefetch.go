//go:build amd64 || arm64

package groupstate

import "unsafe"

// prefetch asks the processor to fetch the first, second and last cache
// lines of the size bytes at p, and returns at once. It is a hint, which
// neither faults nor waits for memory (prefetch_amd64.s, prefetch_arm64.s).
//
//go:noescape
func prefetch(p unsafe.Pointer, size uintptr)

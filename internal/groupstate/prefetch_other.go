//go:build !amd64 && !arm64

package groupstate

import "unsafe"

// prefetch does nothing where the package has no assembly for it.
func prefetch(p unsafe.Pointer, size uintptr) {}

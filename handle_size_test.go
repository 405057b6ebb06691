package groupconc

import (
	"testing"
	"unsafe"
)

// TestTaskHandleSize guards the size of a handle, which every Submit
// allocates and every waiting task is: what few tasks need belongs in
// taskAside. 224 bytes is a size class of the allocator on 64-bit
// platforms.
func TestTaskHandleSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes checked on 64-bit platforms only")
	}
	if got := unsafe.Sizeof(TaskHandle[struct{}]{}); got > 224 {
		t.Errorf("unsafe.Sizeof(TaskHandle[struct{}]{}) = %d, want <= 224", got)
	}
}

#include "textflag.h"

// func prefetch(p unsafe.Pointer, size uintptr)
TEXT ·prefetch(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ	p+0(FP), AX
	MOVQ	size+8(FP), BX
	PREFETCHT0	(AX)
	PREFETCHT0	64(AX)
	PREFETCHT0	-1(AX)(BX*1)
	RET

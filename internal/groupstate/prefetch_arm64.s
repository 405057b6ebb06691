#include "textflag.h"

// func prefetch(p unsafe.Pointer, size uintptr)
TEXT ·prefetch(SB), NOSPLIT|NOFRAME, $0-16
	MOVD	p+0(FP), R0
	MOVD	size+8(FP), R1
	PRFM	(R0), PLDL1KEEP
	PRFM	64(R0), PLDL1KEEP
	ADD	R1, R0, R2
	SUB	$1, R2, R2
	PRFM	(R2), PLDL1KEEP
	RET

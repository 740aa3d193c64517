#include "textflag.h"

// func Lines(p unsafe.Pointer, n uintptr)
TEXT ·Lines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	SUBQ $64, CX
	JHI  loop
	RET

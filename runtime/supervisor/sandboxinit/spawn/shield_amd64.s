#include "textflag.h"

// func nothing(): a signal handler that returns.
TEXT ·nothing(SB),NOSPLIT|NOFRAME,$0-0
	RET

// func nothingPC() uintptr
TEXT ·nothingPC(SB),NOSPLIT,$0-8
	MOVQ	$·nothing(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

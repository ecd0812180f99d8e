#include "textflag.h"

// func nothing(): a signal handler that returns.
TEXT ·nothing(SB),NOSPLIT|NOFRAME,$0-0
	RET

// func nothingPC() uintptr
TEXT ·nothingPC(SB),NOSPLIT,$0-8
	MOVQ	$·nothing(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// func faultFilter(): the front of the Go runtime's handler for the fault
// signals (C ABI: sig in DI, info in SI, ctx in DX). One whose si_code is
// below zero was queued by a process (sigqueue, rt_tgsigqueueinfo,
// pidfd_send_signal), which the runtime would take for a fault of its
// own and die of: it returns. The rest go on to the runtime's handler.
TEXT ·faultFilter(SB),NOSPLIT|NOFRAME,$0-0
	MOVL	8(SI), AX // info->si_code
	TESTL	AX, AX
	JS	drop
	MOVQ	·goFaultHandler(SB), AX
	JMP	AX
drop:
	RET

// func faultFilterPC() uintptr
TEXT ·faultFilterPC(SB),NOSPLIT,$0-8
	MOVQ	$·faultFilter(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

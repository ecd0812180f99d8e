#include "textflag.h"

// func nothing(): a signal handler that returns.
TEXT ·nothing(SB),NOSPLIT|NOFRAME,$0-0
	RET

// func nothingPC() uintptr
TEXT ·nothingPC(SB),NOSPLIT,$0-8
	MOVD	$·nothing(SB), R0
	MOVD	R0, ret+0(FP)
	RET

// func faultFilter(): as shield_amd64.s's (sig in R0, info in R1, ctx in
// R2, the return in LR). Every register is the kernel's to restore.
TEXT ·faultFilter(SB),NOSPLIT|NOFRAME,$0-0
	MOVW	8(R1), R3 // info->si_code, sign-extended
	CMP	$0, R3
	BLT	drop
	MOVD	·goFaultHandler(SB), R3
	JMP	(R3)
drop:
	RET

// func faultFilterPC() uintptr
TEXT ·faultFilterPC(SB),NOSPLIT,$0-8
	MOVD	$·faultFilter(SB), R0
	MOVD	R0, ret+0(FP)
	RET

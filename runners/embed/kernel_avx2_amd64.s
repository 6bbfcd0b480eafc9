#include "textflag.h"

// func tile6x16(k int, a *float32, lda int, b *float32, c *float32, ldc int, bias *float32, mode int)
//
// C[0:6][0:16] = init + A[0:6][0:k]·B[0:k][0:16] (gemm.go, tileFunc): the
// 6×16 tile lives in 12 YMM accumulators (row r in Y(2r), Y(2r+1)); per k
// two loads of B's row serve the 6 rows, each A value is broadcast once
// and used twice: 12 independent FMA chains, enough to cover the FMA
// latency on both ports, 8 loads per 12 FMAs. Each accumulator adds the k
// products in order, one fused multiply-add each.
//
// Registers: CX groups of 4 k, R11 the k left over; SI A's rows 0-2, DI
// rows 3-5 (SI + 3·lda), R9 lda in bytes; BX B; DX C, R10 ldc in bytes;
// R12 bias; Y12, Y13 B's row; Y14, Y15 broadcasts.

// STEP multiplies A's column at byte offset ao (0, 4, 8, 12) by B's row
// at byte offsets b0, b1 (b0+32) into the accumulators.
#define STEP(ao, b0, b1) \
	VMOVUPS b0(BX), Y12; \
	VMOVUPS b1(BX), Y13; \
	VBROADCASTSS ao(SI), Y14; \
	VFMADD231PS Y12, Y14, Y0; \
	VFMADD231PS Y13, Y14, Y1; \
	VBROADCASTSS ao(SI)(R9*1), Y15; \
	VFMADD231PS Y12, Y15, Y2; \
	VFMADD231PS Y13, Y15, Y3; \
	VBROADCASTSS ao(SI)(R9*2), Y14; \
	VFMADD231PS Y12, Y14, Y4; \
	VFMADD231PS Y13, Y14, Y5; \
	VBROADCASTSS ao(DI), Y15; \
	VFMADD231PS Y12, Y15, Y6; \
	VFMADD231PS Y13, Y15, Y7; \
	VBROADCASTSS ao(DI)(R9*1), Y14; \
	VFMADD231PS Y12, Y14, Y8; \
	VFMADD231PS Y13, Y14, Y9; \
	VBROADCASTSS ao(DI)(R9*2), Y15; \
	VFMADD231PS Y12, Y15, Y10; \
	VFMADD231PS Y13, Y15, Y11

TEXT ·tile6x16(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), DI
	ADDQ SI, DI
	MOVQ b+24(FP), BX
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R10
	SHLQ $2, R10
	MOVQ bias+48(FP), R12
	MOVQ mode+56(FP), R11

	CMPQ R11, $1
	JEQ  initbias
	CMPQ R11, $2
	JEQ  initc
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	JMP  body

initbias:
	VMOVUPS (R12), Y0
	VMOVUPS 32(R12), Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y1, Y3
	VMOVAPS Y0, Y4
	VMOVAPS Y1, Y5
	VMOVAPS Y0, Y6
	VMOVAPS Y1, Y7
	VMOVAPS Y0, Y8
	VMOVAPS Y1, Y9
	VMOVAPS Y0, Y10
	VMOVAPS Y1, Y11
	JMP  body

initc:
	MOVQ DX, R13
	VMOVUPS (R13), Y0
	VMOVUPS 32(R13), Y1
	ADDQ R10, R13
	VMOVUPS (R13), Y2
	VMOVUPS 32(R13), Y3
	ADDQ R10, R13
	VMOVUPS (R13), Y4
	VMOVUPS 32(R13), Y5
	ADDQ R10, R13
	VMOVUPS (R13), Y6
	VMOVUPS 32(R13), Y7
	ADDQ R10, R13
	VMOVUPS (R13), Y8
	VMOVUPS 32(R13), Y9
	ADDQ R10, R13
	VMOVUPS (R13), Y10
	VMOVUPS 32(R13), Y11

body:
	MOVQ CX, R11
	ANDQ $3, R11
	SHRQ $2, CX
	JZ   tail

loop4:
	STEP(0, 0, 32)
	STEP(4, 64, 96)
	STEP(8, 128, 160)
	STEP(12, 192, 224)
	ADDQ $16, SI
	ADDQ $16, DI
	ADDQ $256, BX
	DECQ CX
	JNZ  loop4

tail:
	TESTQ R11, R11
	JZ    store

loop1:
	STEP(0, 0, 32)
	ADDQ $4, SI
	ADDQ $4, DI
	ADDQ $64, BX
	DECQ R11
	JNZ  loop1

store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ R10, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ R10, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ R10, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ R10, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ R10, DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET

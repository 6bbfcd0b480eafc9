#include "textflag.h"

// func dot4x2(w *float32, stride int, x0, x1 *float32, n int, acc *[64]float32)
//
// For the 4 rows w, w+stride, w+2·stride, w+3·stride (stride in float32s)
// and the 2 vectors x0, x1, all of length n (a positive multiple of 8),
// accumulates the 8 dot products in 8 AVX registers of 8 lanes each and
// stores them to acc: acc[8·(2·r+t) : 8·(2·r+t)+8] sums to row r · x_t.
// Each loaded weight vector serves both tokens and each token vector all
// four rows, and the 8 independent FMA chains hide the FMA latency.
TEXT ·dot4x2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), BX
	SHLQ $2, BX
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R10
	LEAQ (R10)(BX*1), R11
	MOVQ x0+16(FP), SI
	MOVQ x1+24(FP), DI
	MOVQ n+32(FP), CX
	MOVQ acc+40(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ AX, AX

loop:
	VMOVUPS (SI)(AX*1), Y8
	VMOVUPS (DI)(AX*1), Y9
	VMOVUPS (R8)(AX*1), Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VMOVUPS (R9)(AX*1), Y11
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VMOVUPS (R10)(AX*1), Y12
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VMOVUPS (R11)(AX*1), Y13
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ $32, AX
	SUBQ $8, CX
	JNZ loop

	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	VZEROUPPER
	RET

#include "textflag.h"

// func gelu8(h *float32, n int, consts *[17 * 8]float32)
//
// h[i] = GELU(h[i]) = h[i]/2·(1 + erf(h[i]/√2)) for i < n (a positive
// multiple of 8), 8 at a time, with erf32's rational function (encoder.go)
// evaluated by Horner's rule in fused multiply-adds. consts holds, 8 times
// each (one YMM load apiece), 1/√2, -4, 4, 0.5, 1, erf32's numerator
// coefficients from the highest power of x² down (7) and its
// denominator's (5): geluConsts.
TEXT ·gelu8(SB), NOSPLIT, $0-24
	MOVQ h+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ consts+16(FP), SI
	SHRQ $3, CX

loop:
	VMOVUPS (DI), Y0
	VMULPS  0(SI), Y0, Y1
	VMAXPS  32(SI), Y1, Y1
	VMINPS  64(SI), Y1, Y1
	VMULPS  Y1, Y1, Y2
	VMOVUPS 160(SI), Y3
	VFMADD213PS 192(SI), Y2, Y3
	VFMADD213PS 224(SI), Y2, Y3
	VFMADD213PS 256(SI), Y2, Y3
	VFMADD213PS 288(SI), Y2, Y3
	VFMADD213PS 320(SI), Y2, Y3
	VFMADD213PS 352(SI), Y2, Y3
	VMOVUPS 384(SI), Y4
	VFMADD213PS 416(SI), Y2, Y4
	VFMADD213PS 448(SI), Y2, Y4
	VFMADD213PS 480(SI), Y2, Y4
	VFMADD213PS 512(SI), Y2, Y4
	VMULPS  Y3, Y1, Y3
	VDIVPS  Y4, Y3, Y3
	VADDPS  128(SI), Y3, Y3
	VMULPS  96(SI), Y0, Y0
	VMULPS  Y3, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

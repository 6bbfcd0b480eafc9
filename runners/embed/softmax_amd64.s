#include "textflag.h"

// func exp8(s *float32, n int, scale, top float32, consts *[13 * 8]float32) float32
//
// s[i] = e^(scale·s[i] - top) for i < n (a positive multiple of 8), 8 at a
// time, and returns their sum (8 partial sums in float32, then added). The
// exponential is expf32's (encoder.go) in fused multiply-adds: arguments
// below -87 are raised to -87, x = k·ln2 + r (k = floor(x·log2 e + 1/2),
// ln2 in two parts), e^r by Cephes' polynomial, 2^k from the exponent
// bits. consts holds, 8 times each, -87, log2 e, 1/2, ln2's two parts,
// the polynomial's 6 coefficients from the highest, 1 and the int32 127
// (expConsts).
TEXT ·exp8(SB), NOSPLIT, $0-36
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS scale+16(FP), Y14
	VBROADCASTSS top+20(FP), Y13
	MOVQ consts+24(FP), SI
	SHRQ $3, CX
	VXORPS Y15, Y15, Y15

loop:
	VMOVUPS (DI), Y0
	VFMSUB213PS Y13, Y14, Y0      // x = scale·s - top
	VMAXPS  0(SI), Y0, Y0         // max(x, -87)
	VMOVUPS 32(SI), Y1
	VFMADD213PS 64(SI), Y0, Y1    // x·log2e + 1/2
	VROUNDPS $1, Y1, Y1           // k = floor
	VFNMADD231PS 96(SI), Y1, Y0   // r = x - k·C1
	VFNMADD231PS 128(SI), Y1, Y0  // r -= k·C2
	VMOVUPS 160(SI), Y2
	VFMADD213PS 192(SI), Y0, Y2
	VFMADD213PS 224(SI), Y0, Y2
	VFMADD213PS 256(SI), Y0, Y2
	VFMADD213PS 288(SI), Y0, Y2
	VFMADD213PS 320(SI), Y0, Y2   // p
	VMULPS  Y0, Y0, Y3            // r²
	VFMADD213PS Y0, Y3, Y2        // p·r² + r
	VADDPS  352(SI), Y2, Y2       // + 1
	VCVTTPS2DQ Y1, Y1
	VPADDD  384(SI), Y1, Y1
	VPSLLD  $23, Y1, Y1           // 2^k
	VMULPS  Y1, Y2, Y2
	VMOVUPS Y2, (DI)
	VADDPS  Y2, Y15, Y15
	ADDQ $32, DI
	DECQ CX
	JNZ  loop

	VEXTRACTF128 $1, Y15, X1
	VADDPS X1, X15, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func max8(s *float32, n int) float32
//
// The largest of s[0:n] (n a positive multiple of 8; no NaNs).
TEXT ·max8(SB), NOSPLIT, $0-20
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	VMOVUPS (DI), Y0

maxloop:
	VMAXPS (DI), Y0, Y0
	ADDQ $32, DI
	DECQ CX
	JNZ  maxloop

	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET

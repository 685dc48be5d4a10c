//go:build amd64 && !purego

#include "textflag.h"

// The kernels of kernel_amd64.go (read its comment on the stride-2 access
// first). Registers: AX up, DI row, DX dn (each at the block's first cell),
// CX blocks left, SI the byte offset of the block, Y7/Z7 0.2 in every lane.
// In relaxAVX2 (split lanes, see its comment): Y0 the cells, Y2 their right
// neighbours, Y1 their left ones, Y6 the right ones moved for the next
// block's left, Y5 the previous block's. In the others: Y1/Z1 the right
// neighbours row[j+1..], Y5/Z5 the previous block's, Y2/Z2 the left
// neighbours row[j−1..], Y0/Z0 the sum.

// 0.2, the float64 nearest to it (the Go constant 0.2).
DATA fifth<>+0(SB)/8, $0x3FC999999999999A
GLOBL fifth<>(SB), RODATA|NOPTR, $8

// absEven clears the sign of lanes 0 and 2 and the whole of lanes 1 and 3.
DATA absEven<>+0(SB)/8, $0x7FFFFFFFFFFFFFFF
DATA absEven<>+8(SB)/8, $0
DATA absEven<>+16(SB)/8, $0x7FFFFFFFFFFFFFFF
DATA absEven<>+24(SB)/8, $0
GLOBL absEven<>(SB), RODATA|NOPTR, $32

// func relaxAVX2(up, row, dn *float64, blocks int)
TEXT ·relaxAVX2(SB), NOSPLIT, $0-32
	MOVQ         up+0(FP), AX
	MOVQ         row+8(FP), DI
	MOVQ         dn+16(FP), DX
	MOVQ         blocks+24(FP), CX
	VBROADCASTSD fifth<>(SB), Y7
	VBROADCASTSD -8(DI), Y5          // lane 0 is row[−1], the first left neighbour
	XORQ         SI, SI

avx2loop:
	VMOVUPD      (DI)(SI*1), Y0      // row[j .. j+3]
	VMOVUPD      32(DI)(SI*1), Y1    // row[j+4 .. j+7]
	VUNPCKHPD    Y1, Y0, Y2          // R = row[j+1, j+5, j+3, j+7]
	VUNPCKLPD    Y1, Y0, Y0          // C = row[j, j+4, j+2, j+6]
	VMOVUPD      (AX)(SI*1), Y3
	VUNPCKLPD    32(AX)(SI*1), Y3, Y3 // up at C's columns
	VMOVUPD      (DX)(SI*1), Y4
	VUNPCKLPD    32(DX)(SI*1), Y4, Y4 // dn at C's columns
	VPERMPD      $0x4B, Y2, Y6       // row[j+7, j+3, j+1, j+5]
	VBLENDPD     $1, Y5, Y6, Y1      // L = row[j−1, j+3, j+1, j+5]: lane 0 from the previous block
	VMOVAPD      Y6, Y5
	VADDPD       Y3, Y0, Y0          // C + up
	VADDPD       Y4, Y0, Y0          // + dn
	VADDPD       Y1, Y0, Y0          // + left
	VADDPD       Y2, Y0, Y0          // + right
	VMULPD       Y7, Y0, Y0          // * 0.2
	VEXTRACTF128 $1, Y0, X3
	VMOVLPD      X0, (DI)(SI*1)      // row[j]
	VMOVHPD      X0, 32(DI)(SI*1)    // row[j+4]
	VMOVLPD      X3, 16(DI)(SI*1)    // row[j+2]
	VMOVHPD      X3, 48(DI)(SI*1)    // row[j+6]
	ADDQ         $64, SI
	DECQ         CX
	JNZ          avx2loop
	VZEROUPPER
	RET

// func relaxResAVX2(up, row, dn *float64, blocks int) float64
TEXT ·relaxResAVX2(SB), NOSPLIT, $0-40
	MOVQ         up+0(FP), AX
	MOVQ         row+8(FP), DI
	MOVQ         dn+16(FP), DX
	MOVQ         blocks+24(FP), CX
	VBROADCASTSD fifth<>(SB), Y7
	VMOVDQU      absEven<>(SB), Y8
	VXORPD       Y9, Y9, Y9          // the largest change so far, per lane
	VBROADCASTSD -8(DI), Y5
	XORQ         SI, SI

avx2resloop:
	VMOVUPD    8(DI)(SI*1), Y1
	VPERM2F128 $0x21, Y1, Y5, Y2
	VMOVUPD    (DI)(SI*1), Y0        // old
	VADDPD     (AX)(SI*1), Y0, Y3
	VADDPD     (DX)(SI*1), Y3, Y3
	VADDPD     Y2, Y3, Y3
	VADDPD     Y1, Y3, Y3
	VMULPD     Y7, Y3, Y3            // new
	VEXTRACTF128 $1, Y3, X10
	VMOVSD     X3, (DI)(SI*1)
	VMOVSD     X10, 16(DI)(SI*1)
	VSUBPD     Y0, Y3, Y4            // new − old
	VANDPD     Y8, Y4, Y4            // |new − old| in lanes 0 and 2, +0 in 1 and 3
	VMAXPD     Y9, Y4, Y9            // NaN in Y4 (first source) keeps Y9
	VMOVAPD    Y1, Y5
	ADDQ       $32, SI
	DECQ       CX
	JNZ        avx2resloop

	// Fold the lanes; none is NaN or negative, so the order is immaterial.
	VEXTRACTF128 $1, Y9, X10
	VMAXPD       X10, X9, X9
	VPERMILPD    $1, X9, X10
	VMAXPD       X10, X9, X9
	VMOVSD       X9, ret+32(FP)
	VZEROUPPER
	RET

// func relaxAVX512(up, row, dn *float64, blocks int)
TEXT ·relaxAVX512(SB), NOSPLIT, $0-32
	MOVQ         up+0(FP), AX
	MOVQ         row+8(FP), DI
	MOVQ         dn+16(FP), DX
	MOVQ         blocks+24(FP), CX
	MOVL         $0x55, BX
	KMOVW        BX, K1              // even lanes
	VBROADCASTSD fifth<>(SB), Z7
	VBROADCASTSD -8(DI), Z5          // lane 6 is row[−1], the first left neighbour
	XORQ         SI, SI

avx512loop:
	VMOVUPD 8(DI)(SI*1), Z1          // R = row[j+1 .. j+8]
	VALIGNQ $6, Z5, Z1, Z2           // L = row[j−1 .. j+6]: Z5's lanes 6, 7, then Z1's 0..5
	VMOVUPD (DI)(SI*1), Z0
	VADDPD  (AX)(SI*1), Z0, Z0
	VADDPD  (DX)(SI*1), Z0, Z0
	VADDPD  Z2, Z0, Z0
	VADDPD  Z1, Z0, Z0
	VMULPD  Z7, Z0, Z0
	VMOVUPD Z0, K1, (DI)(SI*1)       // lanes 0, 2, 4, 6 only
	VMOVAPD Z1, Z5
	ADDQ    $64, SI
	DECQ    CX
	JNZ     avx512loop
	VZEROUPPER
	RET

// func relaxResAVX512(up, row, dn *float64, blocks int) float64
TEXT ·relaxResAVX512(SB), NOSPLIT, $0-40
	MOVQ         up+0(FP), AX
	MOVQ         row+8(FP), DI
	MOVQ         dn+16(FP), DX
	MOVQ         blocks+24(FP), CX
	MOVL         $0x55, BX
	KMOVW        BX, K1
	VBROADCASTSD fifth<>(SB), Z7
	MOVQ         $0x7FFFFFFFFFFFFFFF, BX
	VPBROADCASTQ BX, Z8              // clears the sign
	VPXORQ       Z9, Z9, Z9
	VBROADCASTSD -8(DI), Z5
	XORQ         SI, SI

avx512resloop:
	VMOVUPD 8(DI)(SI*1), Z1
	VALIGNQ $6, Z5, Z1, Z2
	VMOVUPD (DI)(SI*1), Z0           // old
	VADDPD  (AX)(SI*1), Z0, Z3
	VADDPD  (DX)(SI*1), Z3, Z3
	VADDPD  Z2, Z3, Z3
	VADDPD  Z1, Z3, Z3
	VMULPD  Z7, Z3, Z3               // new
	VMOVUPD Z3, K1, (DI)(SI*1)
	VSUBPD  Z0, Z3, Z4
	VPANDQ  Z8, Z4, Z4               // |new − old|
	VMAXPD  Z9, Z4, K1, Z9           // even lanes only; NaN in Z4 keeps Z9
	VMOVAPD Z1, Z5
	ADDQ    $64, SI
	DECQ    CX
	JNZ     avx512resloop

	VEXTRACTF64X4 $1, Z9, Y10
	VMAXPD        Y10, Y9, Y9
	VEXTRACTF128  $1, Y9, X10
	VMAXPD        X10, X9, X9
	VPERMILPD     $1, X9, X10
	VMAXPD        X10, X9, X9
	VMOVSD        X9, ret+32(FP)
	VZEROUPPER
	RET

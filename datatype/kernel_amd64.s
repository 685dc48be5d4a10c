//go:build amd64 && !purego

#include "textflag.h"

// func packEvens32AVX2(dst, src unsafe.Pointer, blocks int)
TEXT ·packEvens32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX

loop32:
	VMOVDQU (SI), Y0               // s0 .. s7
	VMOVDQU 32(SI), Y1             // s8 .. s15
	VSHUFPS $0x88, Y1, Y0, Y2      // s0 s2 s8 s10 | s4 s6 s12 s14
	VPERMQ  $0xD8, Y2, Y2          // s0 s2 s4 s6 s8 s10 s12 s14
	VMOVDQU Y2, (DI)
	ADDQ    $64, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop32
	VZEROUPPER
	RET

// func packEvens64AVX2(dst, src unsafe.Pointer, blocks int)
TEXT ·packEvens64AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX

loop64:
	VMOVDQU   (SI), Y0             // d0 d1 d2 d3
	VMOVDQU   32(SI), Y1           // d4 d5 d6 d7
	VUNPCKLPD Y1, Y0, Y2           // d0 d4 | d2 d6
	VPERMQ    $0xD8, Y2, Y2        // d0 d2 d4 d6
	VMOVDQU   Y2, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       loop64
	VZEROUPPER
	RET

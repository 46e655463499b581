package probe

import (
	"fmt"
	"strings"
)

// The compute probe's kernel, fmaLoop(out *float32, iters uint32): each
// thread keeps fmaChains independent chains of a = a*m + c and runs
// fmaUnroll rounds of them per loop iteration, so the FMA units stay busy
// (fmaChains chains hide the FMA's latency) and the loop's own
// instructions are 3 in every fmaChains*fmaUnroll+3. The sum of the chains
// is stored, so the compiler keeps them all. PTX ISA 6.0 for sm_60: the
// driver's JIT compiles it for any newer GPU.
const (
	kernelName = "fmaLoop"
	fmaChains  = 8
	fmaUnroll  = 16
	// FMAsPerIteration are the fused multiply-adds one thread does per
	// loop iteration: 2 floating-point operations each.
	FMAsPerIteration = fmaChains * fmaUnroll
)

// KernelFLOPs is how many floating-point operations one launch of the
// compute kernel does: grid blocks of block threads, iters iterations.
func KernelFLOPs(grid, block, iters uint32) float64 {
	return float64(grid) * float64(block) * float64(iters) * FMAsPerIteration * 2
}

// kernelPTX is the compute kernel's PTX text, made once.
var kernelPTX = buildPTX()

func buildPTX() string {
	var b strings.Builder
	b.WriteString(`.version 6.0
.target sm_60
.address_size 64

.visible .entry fmaLoop(
	.param .u64 out,
	.param .u32 iters
)
{
	.reg .pred p;
	.reg .b32 n, id, ctaid, ntid;
	.reg .f32 m, c, x;
	.reg .b64 base, off, addr;
`)
	fmt.Fprintf(&b, "\t.reg .f32 a<%d>;\n\n", fmaChains)
	b.WriteString(`	ld.param.u64 base, [out];
	ld.param.u32 n, [iters];
	mov.u32 id, %tid.x;
	mov.u32 ctaid, %ctaid.x;
	mov.u32 ntid, %ntid.x;
	mad.lo.u32 id, ctaid, ntid, id;
	cvt.rn.f32.u32 x, id;
	mov.f32 m, 0f3F7FFFF0;
	mov.f32 c, 0f3A83126F;
`)
	for i := 0; i < fmaChains; i++ {
		fmt.Fprintf(&b, "\tadd.f32 a%d, x, 0f%08X;\n", i, 0x3F800000+uint32(i)<<16)
	}
	b.WriteString("\tsetp.eq.u32 p, n, 0;\n\t@p bra DONE;\nLOOP:\n")
	for r := 0; r < fmaUnroll; r++ {
		for i := 0; i < fmaChains; i++ {
			fmt.Fprintf(&b, "\tfma.rn.f32 a%d, a%d, m, c;\n", i, i)
		}
	}
	b.WriteString("\tsub.u32 n, n, 1;\n\tsetp.ne.u32 p, n, 0;\n\t@p bra LOOP;\nDONE:\n")
	for i := 1; i < fmaChains; i++ {
		fmt.Fprintf(&b, "\tadd.f32 a0, a0, a%d;\n", i)
	}
	b.WriteString(`	cvta.to.global.u64 base, base;
	mul.wide.u32 off, id, 4;
	add.u64 addr, base, off;
	st.global.f32 [addr], a0;
	ret;
}
`)
	return b.String()
}

// fp32Lanes is the FP32 FMA lanes per SM of a compute capability (NVIDIA's
// CUDA C programming guide, "Arithmetic instructions": 64 on 6.0, 7.x and
// 8.0; 128 on 6.1, 6.2, 8.6 to 8.9, 9.0, 10.x and 12.x); 0 for one not
// known.
func fp32Lanes(major, minor int) int {
	switch {
	case major == 6 && minor == 0, major == 7, major == 8 && minor == 0:
		return 64
	case major == 6, major == 8, major == 9, major == 10, major == 12:
		return 128
	}
	return 0
}

// peakTFLOPS is a GPU's FP32 peak at an SM clock: SMs x lanes x 2 x clock.
func peakTFLOPS(sms, lanes int, clockMHz float64) float64 {
	return float64(sms) * float64(lanes) * 2 * clockMHz * 1e6 / 1e12
}

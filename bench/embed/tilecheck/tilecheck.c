// tilecheck runs the GEMM micro-kernels of runners/embed as the Go
// assembler built them (their machine code, cut out of a Go binary by
// tilecheck.sh) on a machine without Go: it checks tile12x32 (AVX-512)
// and tile6x16 (AVX2) against float64 and against each other bit for bit,
// and with "bench" times them (in L1, and blocked as gemm.go runs them)
// against the FMA loops of bench/embed (fmaZ, fmaY), in the thread's CPU
// time (so that a shared machine's other work does not count).
//
//   tilecheck CODE.bin [bench]
//
// CODE.bin: four little-endian uint32 lengths, then the code of
// tile12x32, tile6x16, fmaZ and fmaY. The kernels are Go ABI0 functions
// (arguments on the stack, no registers preserved): call() builds their
// frame and saves what the C ABI needs kept.
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <sys/mman.h>

typedef struct { int64_t k; float *a, *b, *c; int64_t ldc; float *bias; int64_t mode; } args;

static void call(void *f, const int64_t *x) {
	__asm__ volatile(
		"push %%rbx; push %%rbp; push %%r12; push %%r13; push %%r14; push %%r15; sub $64, %%rsp\n"
		"mov 0(%0), %%rax; mov %%rax, 0(%%rsp); mov 8(%0), %%rax; mov %%rax, 8(%%rsp)\n"
		"mov 16(%0), %%rax; mov %%rax, 16(%%rsp); mov 24(%0), %%rax; mov %%rax, 24(%%rsp)\n"
		"mov 32(%0), %%rax; mov %%rax, 32(%%rsp); mov 40(%0), %%rax; mov %%rax, 40(%%rsp)\n"
		"mov 48(%0), %%rax; mov %%rax, 48(%%rsp); call *%1\n"
		"add $64, %%rsp; pop %%r15; pop %%r14; pop %%r13; pop %%r12; pop %%rbp; pop %%rbx"
		:: "D"(x), "S"(f)
		: "rax", "rcx", "rdx", "r8", "r9", "r10", "r11", "memory", "cc",
		  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
		  "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}
static void tile(void *f, args x) { call(f, (int64_t *)&x); }

static uint64_t s = 88172645463325252ull;
static float rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1); }
static double now(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

enum { K = 400, LDC = 40 };
static float a[K * 12], b[K * 32], bias[32], c0[12 * LDC], c1[12 * LDC], a6[K * 6], b16[K * 16], ci[12 * LDC];

static int check(void *k512, void *k2, int has) {
	int ks[] = {1, 2, 3, 4, 5, 7, 8, 13, 64, 191, 192, 384, 400}, bad = 0, cnt = 0;
	for (int ki = 0; ki < 13; ki++)
		for (int mode = 0; mode < 3; mode++) {
			int k = ks[ki];
			for (int i = 0; i < K * 12; i++) a[i] = rnd();
			for (int i = 0; i < K * 32; i++) b[i] = rnd();
			for (int i = 0; i < 32; i++) bias[i] = rnd();
			for (int i = 0; i < 12 * LDC; i++) ci[i] = rnd();
			memcpy(c0, ci, sizeof ci);
			memcpy(c1, ci, sizeof ci);
			if (has) tile(k512, (args){k, a, b, c0, LDC, bias, mode});
			// the 12×32 tile as four 6×16 tiles, A and B packed for them
			for (int ti = 0; ti < 2; ti++)
				for (int tj = 0; tj < 2; tj++) {
					for (int p = 0; p < k; p++) {
						for (int r = 0; r < 6; r++) a6[p * 6 + r] = a[p * 12 + ti * 6 + r];
						for (int j = 0; j < 16; j++) b16[p * 16 + j] = b[p * 32 + tj * 16 + j];
					}
					tile(k2, (args){k, a6, b16, c1 + ti * 6 * LDC + tj * 16, LDC, bias + tj * 16, mode});
				}
			for (int i = 0; i < 12; i++)
				for (int j = 0; j < LDC; j++) {
					float *g0 = &c0[i * LDC + j], *g1 = &c1[i * LDC + j];
					if (j >= 32) {
						if (*g1 != ci[i * LDC + j] || (has && *g0 != ci[i * LDC + j])) { bad++; printf("wrote beyond the tile: [%d][%d]\n", i, j); }
						continue;
					}
					double w = mode == 1 ? bias[j] : mode == 2 ? ci[i * LDC + j] : 0, sc = fabs(w);
					for (int p = 0; p < k; p++) { w += (double)a[p * 12 + i] * b[p * 32 + j]; sc += fabs((double)a[p * 12 + i] * b[p * 32 + j]); }
					double tol = 1e-6 + 6e-7 * sqrt(k) * sc;
					cnt++;
					if (fabs(*g1 - w) > tol && bad++ < 5) printf("avx2 k=%d mode=%d [%d][%d] %g, float64 %g\n", k, mode, i, j, *g1, w);
					if (has && fabs(*g0 - w) > tol && bad++ < 5) printf("avx512 k=%d mode=%d [%d][%d] %g, float64 %g\n", k, mode, i, j, *g0, w);
					if (has && memcmp(g0, g1, 4) && bad++ < 5) printf("k=%d mode=%d [%d][%d]: avx512 %a, avx2 %a\n", k, mode, i, j, *g0, *g1);
				}
		}
	printf("%d values checked against float64%s: %d bad\n", cnt, has ? ", avx512 against avx2 bit for bit" : " (no AVX-512: avx2 only)", bad);
	return bad;
}

// bench times one kernel of mr×nr at several kc: in L1 (one tile, again
// and again) and blocked as gemm.go runs it (a packed block of 192 rows of
// A against the 1152 columns of the QKV product, panel by panel).
static float A[192 * 400], B[1152 * 400], C[192 * 1152];
static void bench(const char *name, void *f, int mr, int nr, double peak) {
	for (int kk = 0; kk < 4; kk++) {
	int kc = (int[]){128, 192, 256, 384}[kk];
	for (int i = 0; i < 192 * 400; i++) A[i] = rnd();
	for (int i = 0; i < 1152 * 400; i++) B[i] = rnd();
	long n = 2000000000L / (2L * mr * nr * kc);
	double t = now();
	for (long i = 0; i < n; i++) tile(f, (args){kc, A, B, C, 1152, 0, 0});
	double l1 = 2.0 * mr * nr * kc * n / (now() - t) / 1e9;
	int reps = 20;
	t = now();
	for (int r = 0; r < reps; r++)
		for (int j = 0; j < 1152; j += nr)
			for (int i = 0; i < 192; i += mr)
				tile(f, (args){kc, A + i * kc, B + j * kc, C + i * 1152 + j, 1152, 0, 0});
	double blk = 2.0 * 192 * 1152 * kc * reps / (now() - t) / 1e9;
	printf("%s (%dx%d, kc %d), one thread: %.1f GFLOP/s in L1 (%.0f%% of the FMA loop), %.1f blocked (%.0f%%)\n",
		name, mr, nr, kc, l1, 100 * l1 / peak, blk, 100 * blk / peak);
	}
}

static double fma_peak(const char *name, void *f, int lanes) {
	int64_t n = 100000000 / lanes;
	call(f, &n); // warm up (clock, AVX-512 licence)
	double t = now();
	call(f, &n);
	double g = 12.0 * lanes * 2 * n / (now() - t) / 1e9;
	printf("%s FMA loop, one thread: %.1f GFLOP/s (%.2f GHz at 2 FMA units)\n", name, g, g / (2 * lanes * 2));
	return g;
}

int main(int argc, char **argv) {
	static unsigned char buf[1 << 16];
	FILE *fp = fopen(argv[1], "rb");
	if (!fp) { perror(argv[1]); return 2; }
	size_t n = fread(buf, 1, sizeof buf, fp);
	fclose(fp);
	uint32_t len[4];
	memcpy(len, buf, 16);
	unsigned char *m = mmap(0, 4 * 16384, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *f[4];
	size_t off = 16;
	for (int i = 0; i < 4; i++) { f[i] = m + i * 16384; memcpy(f[i], buf + off, len[i]); off += len[i]; }
	int has = __builtin_cpu_supports("avx512f");
	printf("%zu bytes: tile12x32 %u, tile6x16 %u, fmaZ %u, fmaY %u; AVX-512F %s\n", n, len[0], len[1], len[2], len[3], has ? "yes" : "no");
	int bad = check(f[0], f[1], has);
	if (argc > 2 && !strcmp(argv[2], "bench")) {
		if (has) bench("avx512", f[0], 12, 32, fma_peak("zmm", f[2], 16));
		bench("avx2", f[1], 6, 16, fma_peak("ymm", f[3], 8));
	}
	return bad != 0;
}

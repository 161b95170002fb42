/* Makes a process, and every process it starts, see a CPU without AVX-512 (and optionally
 * without AVX-VNNI), so that libraries which pick their kernels from CPUID alone (ONNX Runtime's
 * MLAS, PyTorch, numpy, gemm, sage) run their AVX2 paths on an AVX-512 machine, in one sitting
 * beside their native paths.
 *
 *     cc -O2 -shared -fPIC -o hide_cpu_features.so hide_cpu_features.c
 *     HIDE_CPU_FEATURES=avx512,avx-vnni LD_PRELOAD=$PWD/hide_cpu_features.so python ...
 *
 * How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, the `cpuid_fault` flag of
 * /proc/cpuinfo) turns every CPUID instruction of the process into a SIGSEGV; the handler runs
 * the real CPUID with faulting briefly off, clears the hidden features' bits and steps over the
 * instruction. The setting is inherited by threads and forks and cleared by execve, where
 * LD_PRELOAD installs it again. Code compiled to assume a feature (-C target-cpu) still uses it:
 * only what is chosen at run time from CPUID changes. The C library's own string functions were
 * chosen before this library loads and keep their AVX-512 forms.
 *
 * HIDE_CPU_FEATURES: a comma list of `avx512` (every AVX-512 subset, AVX512-BF16, AVX10,
 * AMX) and `avx-vnni` (AVX-VNNI, AVX-VNNI-INT8, AVX-IFMA); `avx512` alone when unset. Where the
 * kernel refuses CPUID faulting the process stops at once with a message instead of running
 * unmasked.
 *
 * Limits: the handler is the process's SIGSEGV handler. Code that installs its own afterwards
 * (Python's faulthandler, which pytest and PYTHONFAULTHANDLER turn on) takes the next CPUID for
 * a crash, and a thread that blocks SIGSEGV is killed by its first CPUID: run benchmarks, not
 * test suites, under it. Rust's stack-overflow handler leaves an installed handler in place, so
 * a Rust program under it reports a stack overflow as a plain segmentation fault. Any fault
 * that is not a CPUID goes to the handler that was there before, or to the default action. */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static int hide_avx512 = 1, hide_avx_vnni = 0;
/* the SIGSEGV action before this library's, for every fault that is not a CPUID */
static struct sigaction previous;

static void real_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static void mask(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    if (leaf != 7) return;
    if (sub == 0 && hide_avx512) {
        /* EBX: F, DQ, IFMA, PF, ER, CD, BW, VL */
        r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
                  (1u << 30) | (1u << 31));
        /* ECX: VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ */
        r[2] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
        /* EDX: 4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, FP16, AMX-TILE, AMX-INT8 */
        r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) |
                  (1u << 25));
    }
    if (sub == 1) {
        if (hide_avx512) {
            r[0] &= ~(1u << 5);  /* EAX: AVX512-BF16 */
            r[3] &= ~(1u << 19); /* EDX: AVX10 */
        }
        if (hide_avx_vnni) {
            r[0] &= ~((1u << 4) | (1u << 23)); /* EAX: AVX-VNNI, AVX-IFMA */
            r[3] &= ~(1u << 4);                /* EDX: AVX-VNNI-INT8 */
        }
    }
}

/* A fault that is not a CPUID: the previous handler's, else the default action (the faulting
 * instruction runs again and faults into it; a signal sent by kill is sent again). */
static void pass_on(int sig, siginfo_t *info, void *context) {
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) {
            previous.sa_sigaction(sig, info, context);
            return;
        }
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL);
    if (info->si_code <= 0) raise(sig);
}

static void on_fault(int sig, siginfo_t *info, void *context) {
    greg_t *regs = ((ucontext_t *)context)->uc_mcontext.gregs;
    /* a CPUID fault is a general protection fault, which the kernel reports as SI_KERNEL; only
     * then is the instruction pointer known to point at readable code */
    const uint8_t *ip = (const uint8_t *)regs[REG_RIP];
    if (info->si_code != SI_KERNEL || ip[0] != 0x0f || ip[1] != 0xa2) {
        pass_on(sig, info, context);
        return;
    }
    uint32_t r[4];
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
    real_cpuid((uint32_t)regs[REG_RAX], (uint32_t)regs[REG_RCX], r);
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0);
    mask((uint32_t)regs[REG_RAX], (uint32_t)regs[REG_RCX], r);
    regs[REG_RAX] = r[0];
    regs[REG_RBX] = r[1];
    regs[REG_RCX] = r[2];
    regs[REG_RDX] = r[3];
    regs[REG_RIP] += 2;
}

__attribute__((constructor)) static void install(void) {
    const char *hide = getenv("HIDE_CPU_FEATURES");
    if (hide && *hide) {
        char list[256];
        snprintf(list, sizeof list, "%s", hide);
        hide_avx512 = 0;
        for (char *item = strtok(list, ","); item; item = strtok(NULL, ",")) {
            if (!strcmp(item, "avx512")) hide_avx512 = 1;
            else if (!strcmp(item, "avx-vnni")) hide_avx_vnni = 1;
            else {
                fprintf(stderr, "hide_cpu_features: HIDE_CPU_FEATURES names %s; known: avx512, avx-vnni\n", item);
                _exit(2);
            }
        }
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &action, &previous);
    if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) {
        perror("hide_cpu_features: this kernel or CPU refuses CPUID faulting (arch_prctl ARCH_SET_CPUID)");
        _exit(2);
    }
}

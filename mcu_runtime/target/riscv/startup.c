/*
 * startup.c (RISC-V) - fault handling for mcugen's QEMU riscv32 test images.
 *
 * Boot: picolibc's crt0 (linked with --specs=picolibc.specs --crt0=semihost --oslib=semihost and
 * picolibc.ld, the board's regions given as __flash/__flash_size/__ram/__ram_size) sets gp, sp
 * and tp, copies .data/.tdata, zeroes .bss, runs the constructors and then exit(main()); picolibc's
 * semihosting _exit passes main's status to QEMU (SYS_EXIT_EXTENDED), which exits with it.
 *
 * The constructor below replaces crt0's trap vector with mcu_trap, which prints mcause, mepc and
 * mtval by semihosting and exits with MCU_EXIT_FAULT (4), as the Cortex-M fault handler does, so
 * that an illegal instruction or a bad access fails the run loudly (crt0's own handler exits 1,
 * the harness's "file error").
 */
#include <stdint.h>
#include <stdlib.h>

#include "../mcu_fault_text.h"

/** QEMU exit status after an unexpected exception (illegal instruction, access fault, ...). */
#define MCU_EXIT_FAULT 4

extern uint32_t __stack_top__[];

void mcu_trap(void) __attribute__((naked, noreturn, aligned(4)));
void mcu_trap_report(void) __attribute__((noreturn, used));
void mcu_install_trap(void) __attribute__((constructor));

/* CSR access; gcc 12 (ISA spec 20191213) wants Zicsr named for csrr/csrw; clang 14 takes them in
 * the base ISA and has no `.option arch`. */
#if defined(__clang__)
#define MCU_ZICSR(text) text
#else
#define MCU_ZICSR(text) ".option push\n\t.option arch, +zicsr\n\t" text "\n\t.option pop"
#endif
#define MCU_CSR_READ(name, value) __asm__ volatile(MCU_ZICSR("csrr %0, " name) : "=r"(value))

void mcu_install_trap(void)
{
    __asm__ volatile(MCU_ZICSR("csrw mtvec, %0") : : "r"((uintptr_t)mcu_trap) : "memory");
}

/* Trap entry (direct mode): a fresh stack at the top, then the report. */
void mcu_trap(void)
{
    __asm__ volatile("la sp, __stack_top__\n\t"
                     "j mcu_trap_report\n\t");
}

/* Semihosting call: the RISC-V sequence QEMU recognises (uncompressed, one page). */
static uintptr_t mcu_semihost(uintptr_t op, const void *arg)
{
    register uintptr_t a0 __asm__("a0") = op;
    register const void *a1 __asm__("a1") = arg;
    /* aligned before norvc: clang 14 cannot pad a norvc region with 2-byte NOPs */
    __asm__ volatile(".balign 16\n\t.option push\n\t.option norvc\n\t"
                     "slli x0, x0, 0x1f\n\tebreak\n\tsrai x0, x0, 7\n\t.option pop"
                     : "+r"(a0)
                     : "r"(a1)
                     : "memory");
    return a0;
}

static void mcu_put(const char *text)
{
    (void)mcu_semihost(0x04 /* SYS_WRITE0 */, text);
}

static void mcu_put_hex(const char *label, uint32_t value)
{
    char text[MCU_HEX_TEXT_SIZE];
    mcu_put(mcu_hex_text(text, label, value));
}

void mcu_trap_report(void)
{
    uintptr_t cause;
    uintptr_t epc;
    uintptr_t tval;
    MCU_CSR_READ("mcause", cause);
    MCU_CSR_READ("mepc", epc);
    MCU_CSR_READ("mtval", tval);
    mcu_put("\nmcugen: unexpected exception");
    mcu_put_hex("mcause", (uint32_t)cause);
    mcu_put_hex("mepc", (uint32_t)epc);
    mcu_put_hex("mtval", (uint32_t)tval);
    mcu_put("\n");
    _Exit(MCU_EXIT_FAULT);
}

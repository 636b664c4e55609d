/*
 * startup.c - reset and fault handling for mcugen's QEMU test images (every Cortex-M core).
 *
 * Boot sequence (target-notes "Start-up"):
 *   1. the core loads SP and PC from the vector table below (placed first in CODE by cortex_m.ld);
 *   2. Reset_Handler enables the FPU/MVE coprocessors when the build uses them (CPACR |= 0xF << 20),
 *      sets the v8-M stack limit, copies .data from flash, zeroes .bss;
 *   3. initialise_monitor_handles() opens the semihosting stdin/stdout/stderr;
 *   4. __libc_init_array() runs constructors, then exit(main()) - QEMU exits with main's status.
 * newlib's _start is never called: rdimon's crt0 takes SP from SYS_HEAPINFO, which on mps3-an547
 * points into the memory holding the code.
 *
 * Every other exception lands in mcu_fault_handler, which prints the exception number, the fault
 * status registers (v7-M/v8-M mainline only) and the stacked PC/LR via semihosting, then exits with
 * MCU_EXIT_FAULT so that the runner fails loudly instead of hanging.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mcu_fault_text.h"

/** QEMU exit status after an unexpected exception (HardFault, ...). */
#define MCU_EXIT_FAULT 4

/* Linker-script symbols (cortex_m.ld). */
extern uint32_t __data_load__[];
extern uint32_t __data_start__[];
extern uint32_t __data_end__[];
extern uint32_t __bss_start__[];
extern uint32_t __bss_end__[];
extern uint32_t __stack_top__[];
extern uint32_t __stack_limit__[];

/* newlib / rdimon. */
extern void initialise_monitor_handles(void);
extern void __libc_init_array(void);
extern int main(void);

void Reset_Handler(void) __attribute__((noreturn));
void mcu_fault_handler(void) __attribute__((naked, noreturn));
void mcu_fault_report(const uint32_t *frame, uint32_t exc_return) __attribute__((noreturn, used));

/* One vector-table slot: the initial stack pointer or a handler address. */
typedef union {
    void (*handler)(void);
    const void *stack;
} mcu_vector_t;

#define MCU_NUM_VECTORS (16 + 32) /* system exceptions + the first 32 external interrupts */

/* Every slot except SP and reset points at the fault handler: no interrupt is ever enabled. */
__attribute__((section(".vectors"), used)) const mcu_vector_t mcu_vectors[MCU_NUM_VECTORS] = {
    [0] = {.stack = __stack_top__},
    [1] = {.handler = Reset_Handler},
    [2 ... MCU_NUM_VECTORS - 1] = {.handler = mcu_fault_handler},
};

void Reset_Handler(void)
{
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
    /* Full access to CP10/CP11 (FPU and MVE) before any compiler-generated FP instruction. */
    volatile uint32_t *const cpacr = (volatile uint32_t *)0xE000ED88u;
    *cpacr |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
#if defined(__ARM_ARCH_8M_MAIN__)
    /* v8-M mainline: a stack overflow past the reserved stack raises a fault instead of
       silently corrupting the heap. */
    __asm__ volatile("msr msplim, %0" : : "r"(__stack_limit__) : "memory");
#endif
    const uint32_t *src = __data_load__;
    for (uint32_t *dst = __data_start__; dst < __data_end__; ++dst) {
        *dst = *src++;
    }
    for (uint32_t *dst = __bss_start__; dst < __bss_end__; ++dst) {
        *dst = 0u;
    }
    initialise_monitor_handles();
    __libc_init_array();
    exit(main());
}

/* Semihosting call (works on every Cortex-M: BKPT 0xAB). */
static int32_t mcu_semihost(int32_t op, const void *arg)
{
    register int32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

static void mcu_put(const char *text)
{
    mcu_semihost(0x04 /* SYS_WRITE0 */, text);
}

static void mcu_put_hex(const char *label, uint32_t value)
{
    char text[MCU_HEX_TEXT_SIZE];
    mcu_put(mcu_hex_text(text, label, value));
}

/* Entry for every exception but reset: pick the stack the frame was pushed to, then report. */
void mcu_fault_handler(void)
{
    __asm__ volatile(
#if defined(__ARM_ARCH_8M_MAIN__)
        "movs r0, #0\n\t"
        "msr msplim, r0\n\t" /* a stack-limit fault leaves MSP at the limit: lift it to report */
#endif
        "movs r0, #4\n\t"
        "mov r1, lr\n\t"
        "tst r0, r1\n\t"
        "beq 1f\n\t"
        "mrs r0, psp\n\t"
        "b 2f\n"
        "1:\n\t"
        "mrs r0, msp\n"
        "2:\n\t"
        "bl mcu_fault_report\n\t");
}

void mcu_fault_report(const uint32_t *frame, uint32_t exc_return)
{
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    mcu_put("\nmcugen: unexpected exception");
    mcu_put_hex("IPSR", ipsr & 0x1FFu);
    if ((ipsr & 0x1FFu) == 3u) {
        mcu_put(" (HardFault)");
    }
#if !defined(__ARM_ARCH_6M__) && !defined(__ARM_ARCH_8M_BASE__)
    mcu_put_hex("CFSR", *(volatile const uint32_t *)0xE000ED28u);
    mcu_put_hex("HFSR", *(volatile const uint32_t *)0xE000ED2Cu);
    mcu_put_hex("MMFAR", *(volatile const uint32_t *)0xE000ED34u);
    mcu_put_hex("BFAR", *(volatile const uint32_t *)0xE000ED38u);
#endif
    mcu_put_hex("EXC_RET", exc_return);
    if ((uintptr_t)frame >= (uintptr_t)__stack_limit__ &&
        (uintptr_t)frame + 32u <= (uintptr_t)__stack_top__) {
        mcu_put_hex("PC", frame[6]);
        mcu_put_hex("LR", frame[5]);
    } else {
        mcu_put_hex("SP", (uint32_t)(uintptr_t)frame);
        mcu_put(" (stacked frame outside the stack: overflow?)");
    }
    mcu_put("\n");
    _Exit(MCU_EXIT_FAULT);
}

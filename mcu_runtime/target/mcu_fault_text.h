/*
 * mcu_fault_text.h - the fault reports' text, shared by the Cortex-M (startup.c) and RISC-V
 * (riscv/startup.c) start-up code of mcugen's QEMU test images; each prints it by its own
 * semihosting call. Shipped beside startup.c in the QEMU kit (emitter/target/kit.py) and in a
 * bundle's test/ folder (emitter/verify/bundle_test.py).
 */
#ifndef MCU_FAULT_TEXT_H
#define MCU_FAULT_TEXT_H

#include <stdint.h>

/** Size of the buffer mcu_hex_text fills: " " + up to 7 label characters + "=0x" + 8 digits + NUL. */
#define MCU_HEX_TEXT_SIZE 20u

/**
 * " <label>=0x<value, 8 lowercase hex digits>" into `text` (MCU_HEX_TEXT_SIZE bytes, NUL-ended);
 * the label is cut to 7 characters. Returns `text`.
 */
static inline const char *mcu_hex_text(char text[MCU_HEX_TEXT_SIZE], const char *label, uint32_t value)
{
    static const char digits[] = "0123456789abcdef";
    unsigned pos = 0u;
    text[pos++] = ' ';
    while (*label != '\0' && pos < 8u) {
        text[pos++] = *label++;
    }
    text[pos++] = '=';
    text[pos++] = '0';
    text[pos++] = 'x';
    for (int nibble = 7; nibble >= 0; --nibble) {
        text[pos++] = digits[(value >> (4 * nibble)) & 0xFu];
    }
    text[pos] = '\0';
    return text;
}

#endif /* MCU_FAULT_TEXT_H */

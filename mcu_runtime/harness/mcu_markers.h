/*
 * mcu_markers.h - instruction-count markers around one inference.
 *
 * On Arm targets MCU_MARK_START() / MCU_MARK_END() emit `mov r11, r11` (Thumb 0x46db) and
 * `mov r10, r10` (0x46d2): architectural no-ops that compilers never generate. The QEMU plugin
 * mcu_runtime/qemu_plugin/insn_count.c counts the instructions executed between the two. The
 * "memory" clobber keeps the compiler from moving loads/stores of the inference across a marker.
 * MCU_MARK_LAP() (`mov r9, r9`, 0x46c9) between them splits the count: per-layer profiles put one
 * after every layer.
 *
 * On RISC-V (rv32) the markers are HINT instructions, architectural no-ops that compilers never
 * generate: `slti x0, x0, 0x7a1` (start, word 0x7a102013), `slti x0, x0, 0x7a2` (end, 0x7a202013)
 * and `slti x0, x0, 0x7a3` (lap, 0x7a302013), always the 32-bit encodings (.option norvc), which the
 * plugin matches whole when loaded with arch=riscv. On every other target the macros expand to
 * nothing.
 */
#ifndef MCU_MARKERS_H
#define MCU_MARKERS_H

#if defined(__arm__)
#define MCU_MARK_START() __asm__ volatile("mov r11, r11" ::: "memory")
#define MCU_MARK_END() __asm__ volatile("mov r10, r10" ::: "memory")
#define MCU_MARK_LAP() __asm__ volatile("mov r9, r9" ::: "memory")
#elif defined(__riscv)
#define MCU_MARK_RISCV_(imm) \
    __asm__ volatile(".option push\n\t.option norvc\n\tslti x0, x0, " imm "\n\t.option pop" ::: "memory")
#define MCU_MARK_START() MCU_MARK_RISCV_("0x7a1")
#define MCU_MARK_END() MCU_MARK_RISCV_("0x7a2")
#define MCU_MARK_LAP() MCU_MARK_RISCV_("0x7a3")
#else
#define MCU_MARK_START() ((void)0)
#define MCU_MARK_END() ((void)0)
#define MCU_MARK_LAP() ((void)0)
#endif

#endif /* MCU_MARKERS_H */

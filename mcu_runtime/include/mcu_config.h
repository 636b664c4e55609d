/*
 * mcu_config.h - the build options of mcu_runtime, set by the bundle that ships it: the one place
 * a bundle's options reach the kernels, so that every build system (the bundle's Makefile,
 * CMakeLists.txt, your own) compiles the kernels as the bundle's scratch sizes were planned.
 *
 * MCU_OPTIMIZE_SIZE: each kernel dispatcher keeps one generic path (no DSP/MVE per-shape
 * specialisation; the shared dot products keep the target's instructions), for the smallest code
 * (MCU_ISA_PLAN in mcu_nn.h). A bundle emitted with `mcugen --optimize size` defines it below; one
 * emitted for speed (the default) does not, and its scratch sizes hold only so: do not define it
 * anywhere else.
 *
 * MCU_PLANNED_FOR_C: the bundle's plan is for the plain C paths (--optimize size, or a core without
 * DSP/MVE). Defined below by such a bundle; it leaves out the generic path's code for a plan made
 * for a DSP/MVE core's paths (a pointwise layer written over its input), which a host build of
 * that core's bundle runs.
 */
#ifndef MCU_CONFIG_H
#define MCU_CONFIG_H

#endif /* MCU_CONFIG_H */

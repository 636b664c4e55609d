/*
 * harness_main.c - runs a generated bundle on raw binary files; the same file for host and target.
 *
 * Host: plain gcc + stdio. Target: arm-none-eabi-gcc + newlib/rdimon (Cortex-M) or
 * riscv64-unknown-elf-gcc + picolibc's semihost library (RISC-V), where fopen/fread/fwrite are
 * semihosting calls on host files relative to QEMU's working directory.
 *
 *   input.bin   k samples back to back; one sample = every model input in graph order
 *               (GLUE_INPUT_BYTES bytes), so k = file size / GLUE_INPUT_BYTES
 *   output.bin  k samples back to back; one sample = every model output in graph order
 *   stack.txt   (target builds only) the deepest stack use of any inference, decimal bytes
 *   layers.bin  (only when built with -DMCU_HARNESS_LAYERS, see below) every layer's output
 *
 * Samples are streamed one at a time through static buffers (no malloc, any k). Each inference runs
 * between MCU_MARK_START()/MCU_MARK_END() (mcu_markers.h) so the QEMU plugin can count its
 * instructions. On success nothing is printed; every failing call prints `status=<code>` on stdout.
 * Exit status: 0 all calls returned 0, 3 at least one call failed, 1 file error (message on stderr),
 * 5 the inference overflowed the reserved stack (target builds).
 *
 * The model is reached only through model_glue.h (written next to, not inside, the bundle):
 * GLUE_NUM_INPUTS/OUTPUTS, GLUE_INPUT/OUTPUT_BYTES, glue_input/output_sizes[], glue_run().
 * Target builds are compiled with -DMCU_HARNESS_TARGET and linked with mcu_runtime/target/.
 *
 * Per-layer dump (`mcugen debug`): built with -DMCU_HARNESS_LAYERS and a model_glue.h that routes
 * the bundle's <PREFIX>_AFTER_LAYER hook to harness_after_layer(), the harness appends one record
 * per layer call and sample to layers.bin: sample number, layer index and byte count (each a
 * 32-bit little-endian unsigned integer), then the layer's output bytes. Without the macro none of
 * this is compiled.
 */
#include <stdint.h>
#include <stdio.h>

#include "model_glue.h"
#include "mcu_markers.h"

#define HARNESS_EXIT_OK 0
#define HARNESS_EXIT_FILE 1
#define HARNESS_EXIT_STATUS 3
#define HARNESS_EXIT_STACK 5

#define HARNESS_ALIGN 16u /* every tensor starts on a 16-byte boundary, as in the model's arena */

/* One sample of every input / output, each tensor padded to HARNESS_ALIGN. */
static int8_t input_buf[GLUE_INPUT_BYTES + HARNESS_ALIGN * GLUE_NUM_INPUTS]
    __attribute__((aligned(HARNESS_ALIGN)));
static int8_t output_buf[GLUE_OUTPUT_BYTES + HARNESS_ALIGN * GLUE_NUM_OUTPUTS]
    __attribute__((aligned(HARNESS_ALIGN)));

/* Lays out `count` tensors of `sizes` in `buf`, each aligned; fills `ptrs`. */
static void harness_layout(int8_t *buf, const unsigned long *sizes, int count, int8_t **ptrs)
{
    unsigned long offset = 0u;
    for (int i = 0; i < count; ++i) {
        offset = (offset + HARNESS_ALIGN - 1u) / HARNESS_ALIGN * HARNESS_ALIGN;
        ptrs[i] = buf + offset;
        offset += sizes[i];
    }
}

#if defined(MCU_HARNESS_TARGET)
/* Stack painting. cortex_m.ld reserves [__stack_limit__, __stack_top__) for the stack. Before each
 * inference every word below the current SP is painted; afterwards the lowest overwritten word
 * gives the inference's depth. Both helpers are always inlined and call nothing, so they never
 * write below main's SP themselves. */
extern uint32_t __stack_limit__[];
extern uint32_t __stack_top__[];

#define HARNESS_PAINT 0xC5A3E1F7u
/* A depth within this many bytes of the reserved stack counts as an overflow: a frame that jumps
   over the whole reservation may leave its lowest words unwritten. */
#define HARNESS_STACK_GUARD 1024u

static inline __attribute__((always_inline)) uintptr_t harness_sp(void)
{
    uintptr_t sp;
#if defined(__riscv)
    __asm__ volatile("mv %0, sp" : "=r"(sp));
#else
    __asm__ volatile("mov %0, sp" : "=r"(sp));
#endif
    return sp;
}

static inline __attribute__((always_inline)) void harness_paint(uintptr_t sp)
{
    for (volatile uint32_t *word = __stack_limit__; (uintptr_t)word < sp; ++word) {
        *word = HARNESS_PAINT;
    }
}

/* Bytes between `sp` and the lowest word that no longer holds the paint. */
static inline __attribute__((always_inline)) unsigned long harness_depth(uintptr_t sp)
{
    const volatile uint32_t *word = __stack_limit__;
    while ((uintptr_t)word < sp && *word == HARNESS_PAINT) {
        ++word;
    }
    return (unsigned long)(sp - (uintptr_t)word);
}
#endif

#if defined(MCU_HARNESS_LAYERS)
void harness_after_layer(int index, const void *output, unsigned long bytes);

static FILE *harness_layers;         /* layers.bin, open while samples run */
static unsigned long harness_sample; /* the sample now running */
static int harness_layers_failed;    /* a write to layers.bin failed */

static void harness_put_u32(unsigned char *at, unsigned long value)
{
    for (int i = 0; i < 4; ++i) {
        at[i] = (unsigned char)((value >> (8 * i)) & 0xFFu);
    }
}

/* The bundle's after-layer hook: one layers.bin record per call. */
void harness_after_layer(int index, const void *output, unsigned long bytes)
{
    unsigned char head[12];
    if (harness_layers == NULL) {
        return;
    }
    harness_put_u32(head, harness_sample);
    harness_put_u32(head + 4, (unsigned long)index);
    harness_put_u32(head + 8, bytes);
    if (fwrite(head, 1u, sizeof head, harness_layers) != sizeof head ||
        fwrite(output, 1u, bytes, harness_layers) != bytes) {
        harness_layers_failed = 1;
    }
}
#endif

int main(void)
{
    int8_t *input_ptrs[GLUE_NUM_INPUTS];
    const int8_t *inputs[GLUE_NUM_INPUTS];
    int8_t *outputs[GLUE_NUM_OUTPUTS];
    harness_layout(input_buf, glue_input_sizes, GLUE_NUM_INPUTS, input_ptrs);
    harness_layout(output_buf, glue_output_sizes, GLUE_NUM_OUTPUTS, outputs);
    for (int i = 0; i < GLUE_NUM_INPUTS; ++i) {
        inputs[i] = input_ptrs[i];
    }

    FILE *const in = fopen("input.bin", "rb");
    if (in == NULL) {
        fputs("harness: cannot open input.bin\n", stderr);
        return HARNESS_EXIT_FILE;
    }
    FILE *const out = fopen("output.bin", "wb");
    if (out == NULL) {
        fputs("harness: cannot create output.bin\n", stderr);
        fclose(in);
        return HARNESS_EXIT_FILE;
    }

#if defined(MCU_HARNESS_LAYERS)
    harness_layers = fopen("layers.bin", "wb");
    if (harness_layers == NULL) {
        fputs("harness: cannot create layers.bin\n", stderr);
        fclose(in);
        fclose(out);
        return HARNESS_EXIT_FILE;
    }
    setvbuf(harness_layers, NULL, _IONBF, 0); /* records written before a crash are kept */
#endif

    int exit_code = HARNESS_EXIT_OK;
    unsigned long samples = 0u;
#if defined(MCU_HARNESS_TARGET)
    unsigned long stack_max = 0u;
    int overflow = 0;
#endif
    for (;;) {
        /* Read one sample; a clean end of file before its first byte ends the loop. */
        unsigned long got = 0u;
        for (int i = 0; i < GLUE_NUM_INPUTS; ++i) {
            got += fread(input_ptrs[i], 1u, glue_input_sizes[i], in);
        }
        if (got == 0u) {
            break;
        }
        if (got != GLUE_INPUT_BYTES) {
            fprintf(stderr, "harness: input.bin ends inside sample %lu (%lu of %lu bytes)\n",
                    samples, got, (unsigned long)GLUE_INPUT_BYTES);
            exit_code = HARNESS_EXIT_FILE;
            break;
        }

#if defined(MCU_HARNESS_TARGET)
        const uintptr_t sp = harness_sp();
        harness_paint(sp);
#endif
#if defined(MCU_HARNESS_LAYERS)
        harness_sample = samples;
#endif
        MCU_MARK_START();
        const int status = glue_run(inputs, outputs);
        MCU_MARK_END();
#if defined(MCU_HARNESS_TARGET)
        const unsigned long depth = harness_depth(sp);
        stack_max = depth > stack_max ? depth : stack_max;
        overflow |= depth + HARNESS_STACK_GUARD > (unsigned long)(sp - (uintptr_t)__stack_limit__);
#endif

        if (status != 0) {
            printf("status=%d\n", status);
            if (exit_code == HARNESS_EXIT_OK) {
                exit_code = HARNESS_EXIT_STATUS;
            }
        }
        for (int i = 0; i < GLUE_NUM_OUTPUTS; ++i) {
            if (fwrite(outputs[i], 1u, glue_output_sizes[i], out) != glue_output_sizes[i]) {
                fputs("harness: cannot write output.bin\n", stderr);
                exit_code = HARNESS_EXIT_FILE;
            }
        }
        ++samples;
    }
    fclose(in);
    if (fclose(out) != 0) {
        fputs("harness: cannot write output.bin\n", stderr);
        exit_code = HARNESS_EXIT_FILE;
    }
#if defined(MCU_HARNESS_LAYERS)
    if (fclose(harness_layers) != 0 || harness_layers_failed) {
        fputs("harness: cannot write layers.bin\n", stderr);
        exit_code = HARNESS_EXIT_FILE;
    }
    harness_layers = NULL;
#endif
    if (samples == 0u && exit_code == HARNESS_EXIT_OK) {
        fputs("harness: input.bin holds no sample\n", stderr);
        exit_code = HARNESS_EXIT_FILE;
    }

#if defined(MCU_HARNESS_TARGET)
    FILE *const stack = fopen("stack.txt", "w");
    if (stack == NULL || fprintf(stack, "%lu\n", stack_max) < 0 || fclose(stack) != 0) {
        fputs("harness: cannot write stack.txt\n", stderr);
        exit_code = HARNESS_EXIT_FILE;
    }
    if (overflow) {
        fprintf(stderr, "harness: the inference (over)filled the %lu-byte stack; rebuild with a "
                        "larger stack= reservation\n",
                (unsigned long)((uintptr_t)__stack_top__ - (uintptr_t)__stack_limit__));
        exit_code = HARNESS_EXIT_STACK;
    }
#endif
    return exit_code;
}

/*
 * syscalls.c - the one piece of libc glue rdimon does not get right for mcugen's test images.
 *
 * rdimon's _sbrk grows the heap from `end` up to the current SP, and relies on its crt0 (which we
 * bypass, see startup.c) for any other limit. Here the heap is [__heap_start__, __heap_end__) as
 * laid out by cortex_m.ld, so that newlib's stdio buffers never reach into the reserved stack and
 * the harness's stack painting measures the stack alone. Everything else (open/read/write/close,
 * exit) is rdimon's semihosting implementation.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

extern char __heap_start__[];
extern char __heap_end__[];

void *_sbrk(ptrdiff_t increment);

void *_sbrk(ptrdiff_t increment)
{
    static char *brk = NULL;
    if (brk == NULL) {
        brk = __heap_start__;
    }
    if (increment > __heap_end__ - brk || increment < __heap_start__ - brk) {
        errno = ENOMEM;
        return (void *)-1;
    }
    char *const previous = brk;
    brk += increment;
    return previous;
}

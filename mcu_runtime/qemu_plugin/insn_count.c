/*
 * insn_count.c - QEMU TCG plugin: executed instructions between mcugen's markers.
 *
 *   qemu-system-arm ... -plugin insn_count.so,out=counts.txt
 *   qemu-system-riscv32 ... -plugin insn_count.so,out=counts.txt,arch=riscv
 *
 * Every translated instruction gets an inline "counter += 1" (exact, no callback per instruction).
 * The two marker instructions of mcu_runtime/harness/mcu_markers.h also get a callback:
 *   mov r11, r11  (first halfword 0x46db)  start: remember the counter
 *   mov r9, r9    (first halfword 0x46c9)  lap:   remember the count since the start or last lap
 *   mov r10, r10  (first halfword 0x46d2)  end:   write one line "<count>[ <lap>...]\n" to out=FILE
 * <count> is the number of instructions executed strictly between the two markers; each <lap> is
 * the count strictly between the previous marker and that lap marker (per-layer profiles: the
 * generated code's AFTER_LAYER hook can emit one lap marker after each layer). Only the first
 * halfword is compared: QEMU 7.2 sometimes reports a 16-bit Thumb instruction as 4 bytes when the
 * next one crosses a 1 KiB page. An end marker without a start marker is ignored; a second start
 * restarts the measurement. Counts are deterministic (TCG executes the guest exactly).
 *
 * arch=riscv (default arch=arm) matches the RISC-V markers instead, whole 32-bit words (the
 * HINTs `slti x0, x0, 0x7a1` start, `0x7a3` lap, `0x7a2` end; see mcu_markers.h). The Thumb
 * halfwords must not be matched there: 0x46d2 is a c.lwsp that compilers do emit.
 *
 * range=NAME:START:LENGTH (repeatable, at most 16; START and LENGTH in C notation, 0x... or
 * decimal) also counts the data bytes loaded and stored in [START, START + LENGTH) between the
 * start and end markers (laps do not split them). The end marker's line then gets, after the
 * counts, one field per range in the order given: " NAME:<loaded>:<stored>" (bytes). An instruction
 * counts its full access size against the range holding its first byte. Memory callbacks run on
 * every load and store (a few times slower), so they are registered only when a range is given;
 * the instruction count and the line's leading fields are the same either way. For example:
 *   -plugin insn_count.so,out=counts.txt,range=dtcm:0x30000000:0x8000,range=isram:0x31000000:0x400000
 *   -> "5140650 dtcm:2345:1234 isram:345:123"
 *
 * Debian ships no qemu-plugin.h, so the few API v1 declarations used are copied below (from QEMU
 * 7.2 include/qemu/qemu-plugin.h). Build: gcc -shared -fPIC -O2 -o insn_count.so insn_count.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- QEMU plugin API, version 1 (subset) ------------------------------------------------- */
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t; /* only ever used through a pointer */
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef uint32_t qemu_plugin_meminfo_t;
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };

enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn,
                                                enum qemu_plugin_op op, void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
                                            qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                                          uint64_t vaddr, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                      void *userdata);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
_Bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
                                    void *userdata);

#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv);
/* ------------------------------------------------------------------------------------------ */

#define MARK_START 0x46dbu /* mov r11, r11 */
#define MARK_END 0x46d2u   /* mov r10, r10 */
#define MARK_LAP 0x46c9u   /* mov r9, r9 */
#define RV_MARK_START 0x7a102013u /* slti x0, x0, 0x7a1 */
#define RV_MARK_END 0x7a202013u   /* slti x0, x0, 0x7a2 */
#define RV_MARK_LAP 0x7a302013u   /* slti x0, x0, 0x7a3 */
#define MAX_LAPS 4096
#define MAX_RANGES 16

static int riscv; /* arch=riscv: match the RISC-V markers */

static uint64_t executed;  /* instructions executed so far (single vCPU) */
static uint64_t start_at;  /* `executed` as seen at the start marker */
static int started;        /* a start marker was seen since the last end marker */
static uint64_t lap_at;    /* `executed` as seen at the start marker or the last lap marker */
static uint64_t laps[MAX_LAPS];
static size_t n_laps;
static FILE *out;

struct range {
    char name[32];
    uint64_t start, length;
    uint64_t loaded, stored; /* bytes, since the start marker */
};
static struct range ranges[MAX_RANGES];
static size_t n_ranges;

static void on_mem(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr,
                   void *userdata)
{
    (void)vcpu_index;
    (void)userdata;
    if (!started) {
        return;
    }
    for (size_t i = 0; i < n_ranges; ++i) {
        if (vaddr - ranges[i].start < ranges[i].length) {
            const uint64_t bytes = 1u << qemu_plugin_mem_size_shift(info);
            if (qemu_plugin_mem_is_store(info)) {
                ranges[i].stored += bytes;
            } else {
                ranges[i].loaded += bytes;
            }
            return;
        }
    }
}

static void on_start(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    (void)userdata;
    start_at = executed;
    lap_at = executed;
    n_laps = 0;
    for (size_t i = 0; i < n_ranges; ++i) {
        ranges[i].loaded = 0;
        ranges[i].stored = 0;
    }
    started = 1;
}

static void on_lap(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    (void)userdata;
    if (!started || n_laps == MAX_LAPS) {
        return;
    }
    laps[n_laps++] = executed - lap_at - 1u; /* drop the previous marker, as on_end does */
    lap_at = executed;
}

static void on_end(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    (void)userdata;
    if (!started) {
        return;
    }
    /* Both snapshots are taken at the same point of a marker's own accounting, so the difference
       counts the start marker and everything up to the end marker; drop the start marker. */
    fprintf(out, "%llu", (unsigned long long)(executed - start_at - 1u));
    for (size_t i = 0; i < n_laps; ++i) {
        fprintf(out, " %llu", (unsigned long long)laps[i]);
    }
    for (size_t i = 0; i < n_ranges; ++i) {
        fprintf(out, " %s:%llu:%llu", ranges[i].name, (unsigned long long)ranges[i].loaded,
                (unsigned long long)ranges[i].stored);
    }
    fputc('\n', out);
    fflush(out);
    started = 0;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    const size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; ++i) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &executed, 1);
        if (n_ranges > 0) {
            qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                             NULL);
        }
        if (qemu_plugin_insn_size(insn) < 2u) {
            continue;
        }
        const uint8_t *bytes = qemu_plugin_insn_data(insn);
        const unsigned halfword = (unsigned)bytes[0] | ((unsigned)bytes[1] << 8);
        unsigned start = MARK_START, end = MARK_END, lap = MARK_LAP, code = halfword;
        if (riscv) {
            if (qemu_plugin_insn_size(insn) != 4u) {
                continue;
            }
            code = halfword | ((unsigned)bytes[2] << 16) | ((unsigned)bytes[3] << 24);
            start = RV_MARK_START;
            end = RV_MARK_END;
            lap = RV_MARK_LAP;
        }
        if (code == start) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_start, QEMU_PLUGIN_CB_NO_REGS, NULL);
        } else if (code == end) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
        } else if (code == lap) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_lap, QEMU_PLUGIN_CB_NO_REGS, NULL);
        }
    }
}

/* "NAME:START:LENGTH" -> ranges[n_ranges++]; 0 on success. */
static int parse_range(const char *spec)
{
    const char *colon = strchr(spec, ':');
    if (n_ranges == MAX_RANGES || colon == NULL || colon == spec ||
        (size_t)(colon - spec) >= sizeof ranges[0].name) {
        return -1;
    }
    struct range *r = &ranges[n_ranges];
    memcpy(r->name, spec, (size_t)(colon - spec));
    r->name[colon - spec] = '\0';
    char *end = NULL;
    r->start = strtoull(colon + 1, &end, 0);
    if (end == colon + 1 || *end != ':') {
        return -1;
    }
    const char *length = end + 1;
    r->length = strtoull(length, &end, 0);
    if (end == length || *end != '\0' || r->length == 0) {
        return -1;
    }
    ++n_ranges;
    return 0;
}

static void on_atexit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    if (out != NULL && out != stderr) {
        fclose(out);
    }
    out = NULL;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv)
{
    (void)info;
    const char *path = NULL;
    for (int i = 0; i < argc; ++i) {
        /* "out=FILE"; QEMU < 6 passed plugin arguments as "arg=out=FILE". */
        const char *arg = strncmp(argv[i], "arg=", 4) == 0 ? argv[i] + 4 : argv[i];
        if (strncmp(arg, "out=", 4) == 0) {
            path = arg + 4;
        } else if (strcmp(arg, "arch=riscv") == 0 || strcmp(arg, "arch=arm") == 0) {
            riscv = arg[5] == 'r';
        } else if (strncmp(arg, "range=", 6) == 0) {
            if (parse_range(arg + 6) != 0) {
                fprintf(stderr, "insn_count: bad argument '%s' (expected range=NAME:START:LENGTH, "
                        "at most %d ranges, names shorter than %zu characters)\n", argv[i],
                        MAX_RANGES, sizeof ranges[0].name);
                return -1;
            }
        } else {
            fprintf(stderr, "insn_count: unknown argument '%s' (expected out=FILE, arch=arm|riscv, "
                    "range=NAME:START:LENGTH)\n", argv[i]);
            return -1;
        }
    }
    if (path == NULL) {
        fprintf(stderr, "insn_count: missing argument out=FILE\n");
        return -1;
    }
    out = fopen(path, "w");
    if (out == NULL) {
        fprintf(stderr, "insn_count: cannot open '%s' for writing\n", path);
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
    return 0;
}

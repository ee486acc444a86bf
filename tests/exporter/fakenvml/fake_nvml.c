/*
 * A fake libnvidia-ml.so.1 for tests: just the NVML symbols nvidia-ml-py 13.x resolves for the
 * exporter, driven by a text state file (path in $FAKE_NVML_STATE) that is re-read on every
 * call, so a test can change cards, processes, Xid events and injected faults while a process
 * that loaded this library keeps running.  Format: README.md next to this file.
 *
 * Build: gcc -shared -fPIC -O1 -Wall -Wl,-soname,libnvidia-ml.so.1 -o DIR/libnvidia-ml.so.1
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sys/time.h>

typedef int nvmlReturn_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_ERROR_UNKNOWN 999

#define EVENT_TYPE_DOUBLE_BIT_ECC 0x2ULL
#define EVENT_TYPE_XID_CRITICAL 0x8ULL
#define SUPPORTED_EVENT_TYPES (EVENT_TYPE_DOUBLE_BIT_ECC | EVENT_TYPE_XID_CRITICAL)
#define MEMORY_V2_VERSION 0x02000028u /* sizeof(nvmlMemory_v2_t) | 2 << 24 */
#define VALUE_NOT_AVAILABLE_ULL (~0ULL)
#define NO_CARD (-1)
#define ANY_MIG (-1)      /* a fault line without mig=: every call on the card */
#define NO_MIG (-2)       /* a call on a whole-card handle or none */
#define NO_INSTANCE 0xFFFFFFFFu
#define OTHER_DEVICE_UUID "GPU-not-a-listed-card"

#define MAX_CARDS 16
#define MAX_ROWS 256
#define MAX_MIG 7   /* MIG devices per card (every table here allows 7 instances) */
#define MAX_GI_ID 32
#define FN_LEN 64
#define TEXT_LEN 96

/* ---- public NVML structs (layouts as in nvml.h / pynvml.py) ---- */
typedef struct fake_device { int index; } *nvmlDevice_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct fake_event_set *nvmlEventSet_t;
typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

/* ---- parsed state ---- */
struct card {
    char uuid[TEXT_LEN], name[TEXT_LEN];
    unsigned long long mem_total, mem_used, mem_reserved, ecc_uncorrected, ecc_corrected;
    unsigned int util, mem_util, remap_corrected, remap_uncorrected, remap_pending, remap_failed;
    int lost;
    int mig_table; /* index into mig_tables (fake_nvml_mig.c); -1: no MIG */
    unsigned int mig_current, mig_pending;
};
struct proc { int card; unsigned int pid; unsigned long long mem; unsigned int gi, ci; };
/* a GPU instance (`gi`) and a compute instance, i.e. a MIG device (`ci`) */
struct gi {
    int card;
    unsigned int id, start;
    char profile[32]; /* a name of the card's table, e.g. 1g.5gb */
    unsigned long long mem_total, mem_used;
};
struct ci { int card; unsigned int gi, id; char uuid[TEXT_LEN]; };
struct procutil { int card; unsigned int pid, sm, mem; unsigned long long ts; };
enum handle_kind { HANDLE_SAME, HANDLE_ALIAS, HANDLE_INVALID, HANDLE_OTHER };
struct xid { int card; unsigned long long xid; enum handle_kind handle; };
struct race { int card; unsigned int times; char tag[TEXT_LEN]; };
struct fault { char fn[FN_LEN]; int code; int card; int mig; };   /* error / unsupported */
struct hang { char fn[FN_LEN]; unsigned int ms; int card; };

struct state {
    char driver[80];
    int n_cards, n_procs, n_procutils, n_xids, n_faults, n_hangs, n_races, n_gis, n_cis;
    struct card cards[MAX_CARDS];
    struct gi gis[MAX_ROWS];
    struct ci cis[MAX_ROWS];
    struct proc procs[MAX_ROWS];
    struct procutil procutils[MAX_ROWS];
    struct xid xids[MAX_ROWS];
    struct race races[MAX_ROWS];
    struct fault faults[MAX_ROWS];
    struct hang hangs[MAX_ROWS];
};

struct fake_event_set {
    unsigned long long registered[MAX_CARDS];
    int delivered; /* xid lines already handed out by this set */
};

static struct fake_device devices[MAX_CARDS]; /* the handles nvmlDeviceGetHandleByIndex gives */
static struct fake_device aliases[MAX_CARDS]; /* the same cards behind other pointers */
static struct fake_device invalid_device;     /* a pointer NVML does not know: INVALID_ARGUMENT */
static struct fake_device other_device;       /* a device that is none of the cards */
static struct fake_device mig_devices[MAX_CARDS][MAX_MIG]; /* MIG device handles */

/* MIG (fake_nvml_mig.c, included at the end of this file) */
static int mig_table_named(const char *name);
static nvmlReturn_t begin_any(const char *fn, nvmlDevice_t device, struct state **out, int *card,
                              int *ci);
static const struct gi *gi_of(const struct state *s, int card, unsigned int id);
static unsigned long long gi_mem_total(const struct state *s, const struct gi *g);
static int init_count;
static pthread_mutex_t event_lock = PTHREAD_MUTEX_INITIALIZER;

/* How often each `procutil_race` tag has struck in this process (tags never repeat). */
static struct { char tag[TEXT_LEN]; unsigned int struck; } race_counts[MAX_ROWS];
static int n_race_counts;
static pthread_mutex_t race_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long long now_us(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
}

static void sleep_ms(unsigned int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* key=value lookup in a line's tokens; returns NULL when absent */
static const char *field(char **tokens, int n, const char *key) {
    size_t len = strlen(key);
    for (int i = 0; i < n; i++)
        if (strncmp(tokens[i], key, len) == 0 && tokens[i][len] == '=') return tokens[i] + len + 1;
    return NULL;
}

static unsigned long long ull_field(char **t, int n, const char *key, unsigned long long dflt) {
    const char *v = field(t, n, key);
    if (v == NULL) return dflt;
    if (strcmp(v, "na") == 0) return VALUE_NOT_AVAILABLE_ULL;
    return strtoull(v, NULL, 10);
}

static void copy_text(char *dst, const char *src, int underscores_to_spaces) {
    snprintf(dst, TEXT_LEN, "%s", src ? src : "");
    if (underscores_to_spaces)
        for (char *p = dst; *p; p++)
            if (*p == '_') *p = ' ';
}

static int card_option(char **t, int n) {
    const char *v = field(t, n, "card");
    return v ? atoi(v) : NO_CARD;
}

static void parse_line(struct state *s, char *line) {
    char *tokens[32], *save = NULL;
    int n = 0;
    for (char *tok = strtok_r(line, " \t\r\n", &save); tok && n < 32;
         tok = strtok_r(NULL, " \t\r\n", &save))
        tokens[n++] = tok;
    if (n == 0 || tokens[0][0] == '#') return;
    const char *kind = tokens[0];
    if (strcmp(kind, "driver") == 0 && n >= 2) {
        snprintf(s->driver, sizeof s->driver, "%s", tokens[1]);
    } else if (strcmp(kind, "card") == 0 && n >= 2 && s->n_cards < MAX_CARDS) {
        struct card *c = &s->cards[s->n_cards++];
        char fallback_uuid[TEXT_LEN];
        snprintf(fallback_uuid, sizeof fallback_uuid, "GPU-fake-%s", tokens[1]);
        copy_text(c->uuid, field(tokens, n, "uuid") ? field(tokens, n, "uuid") : fallback_uuid, 0);
        copy_text(c->name, field(tokens, n, "name") ? field(tokens, n, "name") : "Fake_GPU", 1);
        c->mem_total = ull_field(tokens, n, "mem_total", 16ULL << 30);
        c->mem_used = ull_field(tokens, n, "mem_used", 0);
        c->mem_reserved = ull_field(tokens, n, "mem_reserved", 0);
        c->util = (unsigned int)ull_field(tokens, n, "util", 0);
        c->mem_util = (unsigned int)ull_field(tokens, n, "mem_util", 0);
        c->ecc_uncorrected = ull_field(tokens, n, "ecc_uncorrected", 0);
        c->ecc_corrected = ull_field(tokens, n, "ecc_corrected", 0);
        c->remap_corrected = (unsigned int)ull_field(tokens, n, "remap_corrected", 0);
        c->remap_uncorrected = (unsigned int)ull_field(tokens, n, "remap_uncorrected", 0);
        c->remap_pending = (unsigned int)ull_field(tokens, n, "remap_pending", 0);
        c->remap_failed = (unsigned int)ull_field(tokens, n, "remap_failed", 0);
        c->lost = (int)ull_field(tokens, n, "lost", 0);
        c->mig_table = mig_table_named(field(tokens, n, "mig_profiles"));
        c->mig_current = (unsigned int)ull_field(tokens, n, "mig", 0);
        c->mig_pending = (unsigned int)ull_field(tokens, n, "mig_pending", c->mig_current);
    } else if (strcmp(kind, "proc") == 0 && n >= 2 && s->n_procs < MAX_ROWS) {
        struct proc *p = &s->procs[s->n_procs++];
        p->card = atoi(tokens[1]);
        p->pid = (unsigned int)ull_field(tokens, n, "pid", 0);
        p->mem = ull_field(tokens, n, "mem", VALUE_NOT_AVAILABLE_ULL);
        p->gi = (unsigned int)ull_field(tokens, n, "gi", NO_INSTANCE);
        p->ci = (unsigned int)ull_field(tokens, n, "ci", p->gi == NO_INSTANCE ? NO_INSTANCE : 0);
    } else if (strcmp(kind, "gi") == 0 && n >= 2 && s->n_gis < MAX_ROWS) {
        struct gi *g = &s->gis[s->n_gis++];
        g->card = atoi(tokens[1]);
        g->id = (unsigned int)ull_field(tokens, n, "id", 0);
        g->start = (unsigned int)ull_field(tokens, n, "start", 0);
        snprintf(g->profile, sizeof g->profile, "%s", field(tokens, n, "profile") ? field(tokens, n, "profile") : "");
        g->mem_total = ull_field(tokens, n, "mem_total", 0); /* 0: the profile's size */
        g->mem_used = ull_field(tokens, n, "mem_used", 0);
    } else if (strcmp(kind, "ci") == 0 && n >= 2 && s->n_cis < MAX_ROWS) {
        struct ci *m = &s->cis[s->n_cis++];
        char fallback_uuid[TEXT_LEN];
        m->card = atoi(tokens[1]);
        m->gi = (unsigned int)ull_field(tokens, n, "gi", 0);
        m->id = (unsigned int)ull_field(tokens, n, "id", 0);
        snprintf(fallback_uuid, sizeof fallback_uuid, "MIG-fake-%d-%u-%u", m->card, m->gi, m->id);
        copy_text(m->uuid, field(tokens, n, "uuid") ? field(tokens, n, "uuid") : fallback_uuid, 0);
    } else if (strcmp(kind, "procutil") == 0 && n >= 2 && s->n_procutils < MAX_ROWS) {
        struct procutil *u = &s->procutils[s->n_procutils++];
        u->card = atoi(tokens[1]);
        u->pid = (unsigned int)ull_field(tokens, n, "pid", 0);
        u->sm = (unsigned int)ull_field(tokens, n, "sm", 0);
        u->mem = (unsigned int)ull_field(tokens, n, "mem", 0);
        u->ts = ull_field(tokens, n, "ts", 0); /* 0: "now", i.e. always a fresh sample */
    } else if (strcmp(kind, "xid") == 0 && n >= 3 && s->n_xids < MAX_ROWS) {
        struct xid *x = &s->xids[s->n_xids++];
        const char *handle = field(tokens, n, "handle");
        x->card = atoi(tokens[1]);
        x->xid = strtoull(tokens[2], NULL, 10);
        x->handle = handle == NULL                 ? HANDLE_SAME
                    : strcmp(handle, "alias") == 0   ? HANDLE_ALIAS
                    : strcmp(handle, "invalid") == 0 ? HANDLE_INVALID
                    : strcmp(handle, "other") == 0   ? HANDLE_OTHER
                                                     : HANDLE_SAME;
    } else if (strcmp(kind, "procutil_race") == 0 && n >= 2 && s->n_races < MAX_ROWS) {
        struct race *r = &s->races[s->n_races++];
        r->card = atoi(tokens[1]);
        r->times = (unsigned int)ull_field(tokens, n, "times", 1);
        copy_text(r->tag, field(tokens, n, "tag"), 0);
    } else if (strcmp(kind, "error") == 0 && n >= 3 && s->n_faults < MAX_ROWS) {
        struct fault *f = &s->faults[s->n_faults++];
        snprintf(f->fn, FN_LEN, "%s", tokens[1]);
        f->code = atoi(tokens[2]);
        f->card = card_option(tokens, n);
        f->mig = field(tokens, n, "mig") ? atoi(field(tokens, n, "mig")) : ANY_MIG;
    } else if (strcmp(kind, "unsupported") == 0 && n >= 3 && s->n_faults < MAX_ROWS) {
        struct fault *f = &s->faults[s->n_faults++];
        snprintf(f->fn, FN_LEN, "%s", tokens[2]);
        f->code = NVML_ERROR_NOT_SUPPORTED;
        f->card = atoi(tokens[1]);
        f->mig = ANY_MIG;
    } else if (strcmp(kind, "hang") == 0 && n >= 3 && s->n_hangs < MAX_ROWS) {
        struct hang *h = &s->hangs[s->n_hangs++];
        snprintf(h->fn, FN_LEN, "%s", tokens[1]);
        h->ms = (unsigned int)strtoul(tokens[2], NULL, 10);
        h->card = card_option(tokens, n);
    }
}

/* Reads the state file; NULL when $FAKE_NVML_STATE is unset or unreadable ("no driver"). */
static struct state *load_state(void) {
    const char *path = getenv("FAKE_NVML_STATE");
    if (path == NULL) return NULL;
    FILE *f = fopen(path, "r");
    if (f == NULL) return NULL;
    struct state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        fclose(f);
        return NULL;
    }
    snprintf(s->driver, sizeof s->driver, "550.54.15");
    char line[1024];
    while (fgets(line, sizeof line, f)) parse_line(s, line);
    fclose(f);
    return s;
}

static int matches(const char *pattern_fn, int pattern_card, const char *fn, int card) {
    int fn_ok = strcmp(pattern_fn, "*") == 0 || strcmp(pattern_fn, fn) == 0;
    return fn_ok && (pattern_card == NO_CARD || pattern_card == card);
}

/*
 * Common prologue of every call: load the state, sleep for a matching `hang`, then answer an
 * injected fault, "not initialised", a lost card or a bad card index.  On NVML_SUCCESS *out
 * holds the state (caller frees); otherwise nothing is allocated.
 */
static nvmlReturn_t begin_at(const char *fn, int card, int mig, int needs_init,
                             struct state **out) {
    *out = NULL;
    struct state *s = load_state();
    if (s == NULL) return NVML_ERROR_DRIVER_NOT_LOADED;
    for (int i = 0; i < s->n_hangs; i++)
        if (matches(s->hangs[i].fn, s->hangs[i].card, fn, card)) sleep_ms(s->hangs[i].ms);
    nvmlReturn_t ret = NVML_SUCCESS;
    for (int i = 0; i < s->n_faults && ret == NVML_SUCCESS; i++)
        if (matches(s->faults[i].fn, s->faults[i].card, fn, card) &&
            (s->faults[i].mig == ANY_MIG || s->faults[i].mig == mig))
            ret = s->faults[i].code;
    if (ret == NVML_SUCCESS && needs_init && __atomic_load_n(&init_count, __ATOMIC_SEQ_CST) <= 0)
        ret = NVML_ERROR_UNINITIALIZED;
    if (ret == NVML_SUCCESS && card != NO_CARD) {
        if (card < 0 || card >= s->n_cards) ret = NVML_ERROR_INVALID_ARGUMENT;
        else if (s->cards[card].lost) ret = NVML_ERROR_GPU_IS_LOST;
    }
    if (ret != NVML_SUCCESS) {
        free(s);
        return ret;
    }
    *out = s;
    return NVML_SUCCESS;
}

static nvmlReturn_t begin(const char *fn, int card, int needs_init, struct state **out) {
    return begin_at(fn, card, NO_MIG, needs_init, out);
}

static int device_index(nvmlDevice_t device) {
    if (device != NULL && device >= devices && device < devices + MAX_CARDS)
        return (int)(device - devices);
    if (device != NULL && device >= aliases && device < aliases + MAX_CARDS)
        return (int)(device - aliases);
    return -2;
}

/* Prologue for calls on a device handle; *card is its index (valid on NVML_SUCCESS). */
static nvmlReturn_t begin_device(const char *fn, nvmlDevice_t device, struct state **out,
                                 int *card) {
    *card = device_index(device);
    if (*card < 0) {
        *out = NULL;
        *card = 0;
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    return begin(fn, *card, 1, out);
}

static nvmlReturn_t copy_out(const char *text, char *buf, unsigned int length) {
    if (buf == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(text) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, text, strlen(text) + 1);
    return NVML_SUCCESS;
}

/* ---- init ---- */
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    struct state *s;
    nvmlReturn_t ret = begin("nvmlInitWithFlags", NO_CARD, 0, &s);
    if (ret != NVML_SUCCESS) return ret;
    free(s);
    __atomic_add_fetch(&init_count, 1, __ATOMIC_SEQ_CST);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
    struct state *s;
    nvmlReturn_t ret = begin("nvmlShutdown", NO_CARD, 1, &s);
    if (ret != NVML_SUCCESS) return ret;
    free(s);
    __atomic_sub_fetch(&init_count, 1, __ATOMIC_SEQ_CST);
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return "Fake NVML error";
    }
}

/* ---- system ---- */
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    struct state *s;
    nvmlReturn_t ret = begin("nvmlSystemGetDriverVersion", NO_CARD, 1, &s);
    if (ret != NVML_SUCCESS) return ret;
    ret = copy_out(s->driver, version, length);
    free(s);
    return ret;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    struct state *s;
    nvmlReturn_t ret = begin("nvmlDeviceGetCount_v2", NO_CARD, 1, &s);
    if (ret != NVML_SUCCESS) return ret;
    *count = (unsigned int)s->n_cards;
    free(s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    struct state *s;
    int card = index < MAX_CARDS ? (int)index : MAX_CARDS; /* out of range -> invalid arg */
    nvmlReturn_t ret = begin("nvmlDeviceGetHandleByIndex_v2", card, 1, &s);
    if (ret != NVML_SUCCESS) return ret;
    devices[card].index = card;
    *device = &devices[card];
    free(s);
    return NVML_SUCCESS;
}

/* ---- device queries ---- */
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_device("nvmlDeviceGetIndex", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    *index = (unsigned int)card;
    free(s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    struct state *s;
    int card;
    if (device == &other_device) {
        nvmlReturn_t ret = begin("nvmlDeviceGetUUID", NO_CARD, 1, &s);
        if (ret != NVML_SUCCESS) return ret;
        free(s);
        return copy_out(OTHER_DEVICE_UUID, uuid, length);
    }
    int ci;
    nvmlReturn_t ret = begin_any("nvmlDeviceGetUUID", device, &s, &card, &ci);
    if (ret != NVML_SUCCESS) return ret;
    ret = copy_out(ci < 0 ? s->cards[card].uuid : s->cis[ci].uuid, uuid, length);
    free(s);
    return ret;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_device("nvmlDeviceGetName", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    ret = copy_out(s->cards[card].name, name, length);
    free(s);
    return ret;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    struct state *s;
    int card;
    int ci;
    nvmlReturn_t ret = begin_any("nvmlDeviceGetMemoryInfo", device, &s, &card, &ci);
    if (ret != NVML_SUCCESS) return ret;
    const struct card *c = &s->cards[card];
    if (ci >= 0) { /* a MIG device: its GPU instance's memory */
        const struct gi *g = gi_of(s, card, s->cis[ci].gi);
        memory->total = g ? gi_mem_total(s, g) : 0;
        memory->used = g ? g->mem_used : 0;
    } else { /* v1 counts the driver's reserved memory as used */
        memory->total = c->mem_total;
        memory->used = c->mem_used + c->mem_reserved;
    }
    memory->free = memory->total - memory->used;
    free(s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    struct state *s;
    int card;
    int ci;
    nvmlReturn_t ret = begin_any("nvmlDeviceGetMemoryInfo_v2", device, &s, &card, &ci);
    if (ret != NVML_SUCCESS) return ret;
    if (memory->version != MEMORY_V2_VERSION) {
        free(s);
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    const struct card *c = &s->cards[card];
    if (ci >= 0) { /* a MIG device: its GPU instance's memory, nothing reserved */
        const struct gi *g = gi_of(s, card, s->cis[ci].gi);
        memory->total = g ? gi_mem_total(s, g) : 0;
        memory->reserved = 0;
        memory->used = g ? g->mem_used : 0;
        memory->free = memory->total - memory->used;
        free(s);
        return NVML_SUCCESS;
    }
    memory->total = c->mem_total;
    memory->reserved = c->mem_reserved;
    memory->used = c->mem_used;
    memory->free = c->mem_total - c->mem_used - c->mem_reserved;
    free(s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_device("nvmlDeviceGetUtilizationRates", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    utilization->gpu = s->cards[card].util;
    utilization->memory = s->cards[card].mem_util;
    free(s);
    return NVML_SUCCESS;
}

/* Whether process row i runs on the device: a whole card (every process of the card, as NVML
 * answers a privileged caller on a MIG-enabled card) or one MIG device (ci row). */
static int runs_on(const struct state *s, int i, int card, int ci) {
    const struct proc *p = &s->procs[i];
    if (p->card != card) return 0;
    return ci < 0 || (p->gi == s->cis[ci].gi && p->ci == s->cis[ci].id);
}

/* _v2 (drivers before R510) and _v3 share the struct layout; only the symbol differs. */
static nvmlReturn_t running_processes(const char *fn, nvmlDevice_t device, unsigned int *infoCount,
                                      nvmlProcessInfo_t *infos) {
    struct state *s;
    int card, ci;
    nvmlReturn_t ret = begin_any(fn, device, &s, &card, &ci);
    if (ret != NVML_SUCCESS) return ret;
    unsigned int n = 0;
    for (int i = 0; i < s->n_procs; i++) n += runs_on(s, i, card, ci);
    if (n == 0) {
        *infoCount = 0;
    } else if (infos == NULL || *infoCount < n) {
        *infoCount = n;
        ret = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        unsigned int k = 0;
        for (int i = 0; i < s->n_procs; i++) {
            if (!runs_on(s, i, card, ci)) continue;
            infos[k].pid = s->procs[i].pid;
            infos[k].usedGpuMemory = s->procs[i].mem;
            infos[k].gpuInstanceId = s->procs[i].gi;
            infos[k].computeInstanceId = s->procs[i].ci;
            k++;
        }
        *infoCount = n;
    }
    free(s);
    return ret;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos) {
    return running_processes("nvmlDeviceGetComputeRunningProcesses_v3", device, infoCount, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos) {
    return running_processes("nvmlDeviceGetComputeRunningProcesses_v2", device, infoCount, infos);
}

/*
 * Whether a `procutil_race` line for this card strikes now: each of its tags strikes `times`
 * times in this process, and then never again.
 */
static int race_strikes(const struct state *s, int card) {
    int strikes = 0;
    pthread_mutex_lock(&race_lock);
    for (int i = 0; i < s->n_races && !strikes; i++) {
        const struct race *r = &s->races[i];
        if (r->card != card) continue;
        int k = 0;
        while (k < n_race_counts && strcmp(race_counts[k].tag, r->tag) != 0) k++;
        if (k == n_race_counts) {
            if (n_race_counts == MAX_ROWS) break; /* table full: no more races */
            snprintf(race_counts[n_race_counts++].tag, TEXT_LEN, "%s", r->tag);
        }
        if (race_counts[k].struck < r->times) {
            race_counts[k].struck++;
            strikes = 1;
        }
    }
    pthread_mutex_unlock(&race_lock);
    return strikes;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount,
                                             unsigned long long lastSeenTimeStamp) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_device("nvmlDeviceGetProcessUtilization", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    unsigned long long now = now_us();
    unsigned int n = 0;
    for (int i = 0; i < s->n_procutils; i++) {
        const struct procutil *u = &s->procutils[i];
        if (u->card == card && (u->ts ? u->ts : now) > lastSeenTimeStamp) n++;
    }
    if (n == 0) {
        ret = NVML_ERROR_NOT_FOUND; /* what the driver answers when no sample is newer */
    } else if (utilization == NULL || *processSamplesCount < n) {
        *processSamplesCount = n;
        ret = NVML_ERROR_INSUFFICIENT_SIZE;
    } else if (race_strikes(s, card)) {
        /* a sample arrived since the caller sized its buffer: one more than it has room for */
        *processSamplesCount = n + 1;
        ret = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        unsigned int k = 0;
        for (int i = 0; i < s->n_procutils; i++) {
            const struct procutil *u = &s->procutils[i];
            unsigned long long ts = u->ts ? u->ts : now;
            if (u->card != card || ts <= lastSeenTimeStamp) continue;
            utilization[k].pid = u->pid;
            utilization[k].timeStamp = ts;
            utilization[k].smUtil = u->sm;
            utilization[k].memUtil = u->mem;
            utilization[k].encUtil = 0;
            utilization[k].decUtil = 0;
            k++;
        }
        *processSamplesCount = n;
    }
    free(s);
    return ret;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, unsigned int errorType,
                                         unsigned int counterType, unsigned long long *eccCounts) {
    (void)counterType; /* volatile and aggregate read the same counters here */
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_device("nvmlDeviceGetTotalEccErrors", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    const struct card *c = &s->cards[card];
    if (errorType == 1) *eccCounts = c->ecc_uncorrected;
    else if (errorType == 0) *eccCounts = c->ecc_corrected;
    else ret = NVML_ERROR_INVALID_ARGUMENT;
    free(s);
    return ret;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows,
                                       unsigned int *uncRows, unsigned int *isPending,
                                       unsigned int *failureOccurred) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_device("nvmlDeviceGetRemappedRows", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    const struct card *c = &s->cards[card];
    *corrRows = c->remap_corrected;
    *uncRows = c->remap_uncorrected;
    *isPending = c->remap_pending;
    *failureOccurred = c->remap_failed;
    free(s);
    return NVML_SUCCESS;
}

/* ---- events ---- */
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                              unsigned long long *eventTypes) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_device("nvmlDeviceGetSupportedEventTypes", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    *eventTypes = SUPPORTED_EVENT_TYPES;
    free(s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    struct state *s;
    nvmlReturn_t ret = begin("nvmlEventSetCreate", NO_CARD, 1, &s);
    if (ret != NVML_SUCCESS) return ret;
    free(s);
    *set = calloc(1, sizeof **set);
    return *set ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_device("nvmlDeviceRegisterEvents", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    free(s);
    if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (eventTypes & ~SUPPORTED_EVENT_TYPES) return NVML_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&event_lock);
    set->registered[card] |= eventTypes;
    pthread_mutex_unlock(&event_lock);
    return NVML_SUCCESS;
}

/* Hands out the next undelivered `xid` line for a card registered for Xid events. */
static int next_xid(struct state *s, nvmlEventSet_t set, nvmlEventData_t *data) {
    int found = 0;
    pthread_mutex_lock(&event_lock);
    while (!found && set->delivered < s->n_xids) {
        const struct xid *x = &s->xids[set->delivered++];
        if (x->card < 0 || x->card >= MAX_CARDS) continue;
        if (!(set->registered[x->card] & EVENT_TYPE_XID_CRITICAL)) continue;
        devices[x->card].index = aliases[x->card].index = x->card;
        switch (x->handle) {
        case HANDLE_ALIAS: data->device = &aliases[x->card]; break;
        case HANDLE_INVALID: data->device = &invalid_device; break;
        case HANDLE_OTHER: data->device = &other_device; break;
        default: data->device = &devices[x->card]; break;
        }
        data->eventType = EVENT_TYPE_XID_CRITICAL;
        data->eventData = x->xid;
        data->gpuInstanceId = 0xFFFFFFFFu;
        data->computeInstanceId = 0xFFFFFFFFu;
        found = 1;
    }
    pthread_mutex_unlock(&event_lock);
    return found;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
    if (set == NULL || data == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int waited = 0;; waited += 10) {
        struct state *s;
        nvmlReturn_t ret = begin("nvmlEventSetWait_v2", NO_CARD, 1, &s);
        if (ret != NVML_SUCCESS) return ret;
        int found = next_xid(s, set, data);
        free(s);
        if (found) return NVML_SUCCESS;
        if (waited >= timeoutms) return NVML_ERROR_TIMEOUT;
        sleep_ms(10);
    }
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    struct state *s;
    nvmlReturn_t ret = begin("nvmlEventSetFree", NO_CARD, 1, &s);
    if (ret != NVML_SUCCESS) return ret;
    free(s);
    free(set);
    return NVML_SUCCESS;
}

#include "fake_nvml_mig.c" /* MIG: one translation unit, it uses the statics above */

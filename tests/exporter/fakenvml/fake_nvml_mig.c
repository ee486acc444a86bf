/*
 * MIG for the fake libnvidia-ml.so.1: included at the end of fake_nvml.c (one translation unit,
 * so it shares that file's state and statics; it is not compiled on its own).
 *
 * GPU instance profiles of four cards, as `nvidia-smi mig -lgip` and `-lgipp` list them and
 * NVIDIA's MIG user guide tabulates them ("Supported MIG Profiles",
 * https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html).
 * Placements are on the 8 memory slices: start indices and the slices taken, the same on A100,
 * H100 and H200 (the guide's `nvidia-smi mig -lgipp` listing; H100's is published the same).
 * tests/exporter/test_fakenvml_mig.py holds each row to those sources.
 */

#define GI_PROFILE_INFO_V2_VERSION 0x02000098u /* sizeof(nvmlGpuInstanceProfileInfo_v2_t) | 2<<24 */
#define GI_PROFILE_COUNT 0x12                  /* NVML_GPU_INSTANCE_PROFILE_COUNT */
#define MIG_MEMORY_SLICES 8

typedef struct fake_gpu_instance { int card; unsigned int id; } *nvmlGpuInstance_t;
typedef struct { unsigned int start, size; } nvmlGpuInstancePlacement_t;
typedef struct {
    unsigned int version, id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount,
        copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
    char name[96];
} nvmlGpuInstanceProfileInfo_v2_t;
typedef struct {
    nvmlDevice_t device;
    unsigned int id, profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

struct gi_profile {
    unsigned int nvml_enum; /* NVML_GPU_INSTANCE_PROFILE_* */
    unsigned int id;        /* the profile ID nvidia-smi lists (19, 20, 15, 14, 9, 5, 0) */
    const char *name;
    unsigned int slices, instances, sms;
    unsigned long long memory_mb;
    unsigned int size;   /* memory slices taken */
    unsigned int starts; /* bit k: a placement may start at memory slice k */
};

#define STARTS_1 0x7Fu /* {0,1,2,3,4,5,6} */
#define STARTS_2 0x55u /* {0,2,4,6} */
#define STARTS_2G 0x15u /* {0,2,4} */
#define STARTS_3G 0x11u /* {0,4} */
#define STARTS_0 0x01u  /* {0} */

/* Memory: the GiB `nvidia-smi mig -lgip` prints, in MiB. */
static const struct gi_profile a100_40gb[] = {
    {0, 19, "1g.5gb", 1, 7, 14, 4864, 1, STARTS_1},
    {7, 20, "1g.5gb+me", 1, 1, 14, 4864, 1, STARTS_1},
    {9, 15, "1g.10gb", 1, 4, 14, 9856, 2, STARTS_2},
    {1, 14, "2g.10gb", 2, 3, 28, 9856, 2, STARTS_2G},
    {2, 9, "3g.20gb", 3, 2, 42, 19968, 4, STARTS_3G},
    {3, 5, "4g.20gb", 4, 1, 56, 19968, 4, STARTS_0},
    {4, 0, "7g.40gb", 7, 1, 98, 40192, 8, STARTS_0},
};
static const struct gi_profile a100_80gb[] = {
    {0, 19, "1g.10gb", 1, 7, 14, 9728, 1, STARTS_1},
    {7, 20, "1g.10gb+me", 1, 1, 14, 9728, 1, STARTS_1},
    {9, 15, "1g.20gb", 1, 4, 14, 19968, 2, STARTS_2},
    {1, 14, "2g.20gb", 2, 3, 28, 19968, 2, STARTS_2G},
    {2, 9, "3g.40gb", 3, 2, 42, 40192, 4, STARTS_3G},
    {3, 5, "4g.40gb", 4, 1, 56, 40192, 4, STARTS_0},
    {4, 0, "7g.80gb", 7, 1, 98, 81152, 8, STARTS_0},
};
static const struct gi_profile h100_80gb[] = {
    {0, 19, "1g.10gb", 1, 7, 16, 9984, 1, STARTS_1},
    {7, 20, "1g.10gb+me", 1, 1, 16, 9984, 1, STARTS_1},
    {9, 15, "1g.20gb", 1, 4, 26, 20096, 2, STARTS_2},
    {1, 14, "2g.20gb", 2, 3, 32, 20096, 2, STARTS_2G},
    {2, 9, "3g.40gb", 3, 2, 60, 40448, 4, STARTS_3G},
    {3, 5, "4g.40gb", 4, 1, 64, 40448, 4, STARTS_0},
    {4, 0, "7g.80gb", 7, 1, 132, 81152, 8, STARTS_0},
};
/* H200: 1g.18gb, 2g.35gb and 7g.141gb as listed by `-lgip`; 1g.35gb takes the memory slices
 * of 2g.35gb and 3g.71gb those of 4g.71gb, as on every other card here (their size: not read
 * from a listing, inferred: twice 2g.35gb's plus 256 MiB, as A100's and H100's 4-slice rows). */
static const struct gi_profile h200_141gb[] = {
    {0, 19, "1g.18gb", 1, 7, 16, 16384, 1, STARTS_1},
    {7, 20, "1g.18gb+me", 1, 1, 16, 16384, 1, STARTS_1},
    {9, 15, "1g.35gb", 1, 4, 26, 33280, 2, STARTS_2},
    {1, 14, "2g.35gb", 2, 3, 32, 33280, 2, STARTS_2G},
    {2, 9, "3g.71gb", 3, 2, 60, 66816, 4, STARTS_3G},
    {3, 5, "4g.71gb", 4, 1, 64, 66816, 4, STARTS_0},
    {4, 0, "7g.141gb", 7, 1, 132, 143360, 8, STARTS_0},
};

static const struct {
    const char *name; /* the card line's mig_profiles= */
    const struct gi_profile *rows;
    int n;
} mig_tables[] = {
    {"A100-SXM4-40GB", a100_40gb, 7},
    {"A100-SXM4-80GB", a100_80gb, 7},
    {"H100-SXM5-80GB", h100_80gb, 7},
    {"H200-SXM5-141GB", h200_141gb, 7},
};
#define N_MIG_TABLES ((int)(sizeof mig_tables / sizeof mig_tables[0]))

static struct fake_gpu_instance gpu_instances[MAX_CARDS][MAX_GI_ID];

static int mig_table_named(const char *name) {
    for (int t = 0; name != NULL && t < N_MIG_TABLES; t++)
        if (strcmp(mig_tables[t].name, name) == 0) return t;
    return -1;
}

static const struct gi_profile *profile_where(const struct card *c, const char *name,
                                              unsigned int id, int nvml_enum) {
    if (c->mig_table < 0) return NULL;
    for (int i = 0; i < mig_tables[c->mig_table].n; i++) {
        const struct gi_profile *p = &mig_tables[c->mig_table].rows[i];
        if (name ? strcmp(p->name, name) == 0 : nvml_enum >= 0 ? (int)p->nvml_enum == nvml_enum
                                                                : p->id == id)
            return p;
    }
    return NULL;
}

static const struct gi *gi_of(const struct state *s, int card, unsigned int id) {
    for (int i = 0; i < s->n_gis; i++)
        if (s->gis[i].card == card && s->gis[i].id == id) return &s->gis[i];
    return NULL;
}

static unsigned long long gi_mem_total(const struct state *s, const struct gi *g) {
    const struct gi_profile *p = profile_where(&s->cards[g->card], g->profile, 0, -1);
    if (g->mem_total) return g->mem_total;
    return p ? p->memory_mb << 20 : 0;
}

/* The ci row behind MIG device `slot` of `card`: the slot-th `ci` line of the card. */
static int ci_row(const struct state *s, int card, int slot) {
    for (int i = 0; i < s->n_cis; i++)
        if (s->cis[i].card == card && slot-- == 0) return i;
    return -1;
}

/* Prologue for calls that take a whole-card or a MIG device handle; *ci is the MIG device's
 * ci row, -1 for a whole card. Faults with mig=K match MIG device K only. */
static nvmlReturn_t begin_any(const char *fn, nvmlDevice_t device, struct state **out, int *card,
                              int *ci) {
    *ci = -1;
    if (device != NULL && device >= &mig_devices[0][0] && device < &mig_devices[MAX_CARDS][0]) {
        int flat = (int)(device - &mig_devices[0][0]);
        *card = flat / MAX_MIG;
        nvmlReturn_t ret = begin_at(fn, *card, flat % MAX_MIG, 1, out);
        if (ret != NVML_SUCCESS) return ret;
        *ci = ci_row(*out, *card, flat % MAX_MIG);
        if (*ci < 0) { /* the state no longer has that MIG device */
            free(*out);
            *out = NULL;
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        return NVML_SUCCESS;
    }
    return begin_device(fn, device, out, card);
}

/* Prologue for MIG calls on a whole card: NOT_SUPPORTED on a card without MIG, as on a T4. */
static nvmlReturn_t begin_mig_card(const char *fn, nvmlDevice_t device, struct state **out,
                                   int *card) {
    nvmlReturn_t ret = begin_device(fn, device, out, card);
    if (ret == NVML_SUCCESS && (*out)->cards[*card].mig_table < 0) {
        free(*out);
        *out = NULL;
        return NVML_ERROR_NOT_SUPPORTED;
    }
    return ret;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current,
                                  unsigned int *pending) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_mig_card("nvmlDeviceGetMigMode", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    *current = s->cards[card].mig_current;
    *pending = s->cards[card].mig_pending;
    free(s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_mig_card("nvmlDeviceGetMaxMigDeviceCount", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    *count = s->cards[card].mig_current ? MAX_MIG : 0;
    free(s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t *mig) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_mig_card("nvmlDeviceGetMigDeviceHandleByIndex", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    if (!s->cards[card].mig_current || index >= MAX_MIG) ret = NVML_ERROR_INVALID_ARGUMENT;
    else if (ci_row(s, card, (int)index) < 0) ret = NVML_ERROR_NOT_FOUND; /* an empty slot */
    else *mig = &mig_devices[card][index];
    free(s);
    return ret;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMig) {
    struct state *s;
    int card, ci;
    nvmlReturn_t ret = begin_any("nvmlDeviceIsMigDeviceHandle", device, &s, &card, &ci);
    if (ret != NVML_SUCCESS) return ret;
    *isMig = ci >= 0;
    free(s);
    return NVML_SUCCESS;
}

static nvmlReturn_t instance_id(const char *fn, nvmlDevice_t device, unsigned int *id, int gpu) {
    struct state *s;
    int card, ci;
    nvmlReturn_t ret = begin_any(fn, device, &s, &card, &ci);
    if (ret != NVML_SUCCESS) return ret;
    if (ci < 0) ret = NVML_ERROR_INVALID_ARGUMENT; /* a whole card has no instance */
    else *id = gpu ? s->cis[ci].gi : s->cis[ci].id;
    free(s);
    return ret;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
    return instance_id("nvmlDeviceGetGpuInstanceId", device, id, 1);
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
    return instance_id("nvmlDeviceGetComputeInstanceId", device, id, 0);
}

/* What pynvml's nvmlDeviceGetGpuInstanceProfileInfo (version 2) calls. */
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t *info) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_mig_card("nvmlDeviceGetGpuInstanceProfileInfoV", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    const struct gi_profile *p = profile_where(&s->cards[card], NULL, 0, (int)profile);
    if (info->version != GI_PROFILE_INFO_V2_VERSION) ret = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    else if (profile >= GI_PROFILE_COUNT) ret = NVML_ERROR_INVALID_ARGUMENT;
    else if (p == NULL) ret = NVML_ERROR_NOT_SUPPORTED; /* a profile this card lacks */
    else {
        memset(&info->id, 0, sizeof *info - sizeof info->version);
        info->id = p->id;
        info->sliceCount = p->slices;
        info->instanceCount = p->instances;
        info->multiprocessorCount = p->sms;
        info->copyEngineCount = p->slices;
        info->memorySizeMB = p->memory_mb;
        snprintf(info->name, sizeof info->name, "MIG %s", p->name);
    }
    free(s);
    return ret;
}

/* Every placement of the profile, whatever is created (as NVML documents it). */
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                           unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t *placements,
                                                           unsigned int *count) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_mig_card("nvmlDeviceGetGpuInstancePossiblePlacements_v2", device, &s,
                                      &card);
    if (ret != NVML_SUCCESS) return ret;
    const struct gi_profile *p = profile_where(&s->cards[card], NULL, profileId, -1);
    free(s);
    if (p == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = 0;
    for (unsigned int k = 0; k < MIG_MEMORY_SLICES; k++) n += (p->starts >> k) & 1u;
    if (placements == NULL) {
        *count = n;
        return NVML_SUCCESS;
    }
    if (*count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    n = 0;
    for (unsigned int k = 0; k < MIG_MEMORY_SLICES; k++)
        if ((p->starts >> k) & 1u) placements[n++] = (nvmlGpuInstancePlacement_t){k, p->size};
    *count = n;
    return NVML_SUCCESS;
}

/* Memory slices the card's GPU instances take, one bit each. */
static unsigned int taken_slices(const struct state *s, int card) {
    unsigned int taken = 0;
    for (int i = 0; i < s->n_gis; i++) {
        const struct gi *g = &s->gis[i];
        const struct gi_profile *p = g->card == card ? profile_where(&s->cards[card], g->profile,
                                                                     0, -1)
                                                     : NULL;
        if (p != NULL) taken |= ((1u << p->size) - 1u) << g->start;
    }
    return taken;
}

/* How many more instances of the profile fit beside the created ones (placements in order). */
nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId,
                                                       unsigned int *count) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_mig_card("nvmlDeviceGetGpuInstanceRemainingCapacity", device, &s,
                                      &card);
    if (ret != NVML_SUCCESS) return ret;
    const struct gi_profile *p = profile_where(&s->cards[card], NULL, profileId, -1);
    if (p == NULL || !s->cards[card].mig_current) {
        free(s);
        return p == NULL ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
    }
    unsigned int taken = taken_slices(s, card), n = 0;
    free(s);
    for (unsigned int k = 0; k < MIG_MEMORY_SLICES; k++) {
        unsigned int span = ((1u << p->size) - 1u) << k;
        if (((p->starts >> k) & 1u) && !(taken & span)) {
            taken |= span;
            n++;
        }
    }
    *count = n < p->instances ? n : p->instances;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t *instances, unsigned int *count) {
    struct state *s;
    int card;
    nvmlReturn_t ret = begin_mig_card("nvmlDeviceGetGpuInstances", device, &s, &card);
    if (ret != NVML_SUCCESS) return ret;
    const struct card *c = &s->cards[card];
    const struct gi_profile *p = profile_where(c, NULL, profileId, -1);
    if (!c->mig_current) ret = NVML_ERROR_NOT_SUPPORTED;
    else if (p == NULL || instances == NULL) ret = NVML_ERROR_INVALID_ARGUMENT;
    else {
        unsigned int n = 0;
        for (int i = 0; i < s->n_gis && n < p->instances; i++) {
            const struct gi *g = &s->gis[i];
            if (g->card != card || g->id >= MAX_GI_ID || strcmp(g->profile, p->name) != 0) continue;
            gpu_instances[card][g->id] = (struct fake_gpu_instance){card, g->id};
            instances[n++] = &gpu_instances[card][g->id];
        }
        *count = n;
    }
    free(s);
    return ret;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t instance, nvmlGpuInstanceInfo_t *info) {
    if (instance == NULL || instance < &gpu_instances[0][0] ||
        instance >= &gpu_instances[MAX_CARDS][0])
        return NVML_ERROR_INVALID_ARGUMENT;
    struct state *s;
    nvmlReturn_t ret = begin("nvmlGpuInstanceGetInfo", instance->card, 1, &s);
    if (ret != NVML_SUCCESS) return ret;
    const struct gi *g = gi_of(s, instance->card, instance->id);
    const struct gi_profile *p = g ? profile_where(&s->cards[g->card], g->profile, 0, -1) : NULL;
    if (p == NULL) ret = NVML_ERROR_INVALID_ARGUMENT; /* destroyed since it was listed */
    else {
        devices[g->card].index = g->card;
        info->device = &devices[g->card];
        info->id = g->id;
        info->profileId = p->id;
        info->placement = (nvmlGpuInstancePlacement_t){g->start, p->size};
    }
    free(s);
    return ret;
}

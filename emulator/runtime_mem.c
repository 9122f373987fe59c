/*
 * rknnx emulator, runtime half: emulated DMA memory and the zero-copy API.
 *
 * Memory model (see emu_buf in runtime.h):
 *  - rknn_create_mem / rknn_create_mem2 allocate a memfd of the requested size, map it
 *    (virt_addr, fd) and give it an address in the emulator's own physical address space
 *    (phys_addr; 4 KiB aligned, never reused, starting at 0x40000000).
 *  - Cacheable memory is NOT coherent: the NPU reads and writes a separate device copy.
 *    rknn_mem_sync(TO_DEVICE) copies CPU -> device, FROM_DEVICE device -> CPU.  By default
 *    rknn_run does TO_DEVICE on bound inputs before and FROM_DEVICE on bound outputs after;
 *    RKNN_FLAG_DISABLE_FLUSH_INPUT/OUTPUT_MEM_CACHE turn those off.  Non-cacheable
 *    memory has one copy.
 *  - rknn_create_mem_from_fd accepts any mmap-able fd (memfd, dma-heap, file).  Importing
 *    the fd of an emulator allocation shares that allocation's device copy; a foreign fd
 *    gets its own device copy, initialised from the file's contents at first import and
 *    shared by later imports of the same file while one is alive.  Foreign fds are
 *    treated as cacheable.  virt_addr NULL: the emulator maps the fd itself.  The data is
 *    at virt_addr + offset, which is file offset `offset`.
 *  - rknn_create_mem_from_phys resolves only addresses the emulator handed out.
 *  - rknn_create_mem_from_mb_blk is unsupported (NULL) on every chip, as in V2.5.0.
 *  - rknn_set_weight_mem / rknn_set_internal_mem need the data (virt_addr + offset, i.e. the
 *    fd offset or physical address) aligned to EMU_DMA_ALIGN (16) bytes, as NPU DMA does:
 *    the graph computes in place in that memory; a misaligned mem is RKNN_ERR_PARAM_INVALID.
 *  - rknn_destroy_mem frees only what the runtime owns (its memfd and mappings); a mem
 *    still bound to a context stays allocated until unbound, but a run that meets it
 *    fails (it was destroyed by the user).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime.h"

/* The NPU side of a cacheable buffer: aligned as the DMA memory it plays (EMU_DMA_ALIGN;
 * malloc gives only 8 bytes on 32-bit ABIs), freed with free(). */
static void *dev_alloc(uint64_t size)
{
    void *p = NULL;
    if ((uint64_t)(size_t)size != size || posix_memalign(&p, 64, size ? (size_t)size : 1) != 0)
        return NULL;
    return p;
}

/* memfd_create(2) through syscall(2): glibc has the wrapper only from 2.27, and the
 * manylinux_2_17 wheels run on older C libraries too (the kernel call is from Linux 3.17,
 * older than any supported board kernel).  MFD_CLOEXEC is the kernel's value. */
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
static int emu_memfd_create(const char *name, unsigned int flags)
{
    return (int)syscall(SYS_memfd_create, name, flags);
}

static pthread_mutex_t g_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static emu_mem **g_mems;           /* live (registered) mems */
static size_t g_n_mems, g_cap_mems;
static emu_buf *g_bufs;
static uint64_t g_next_phys = 0x40000000ull;
static atomic_llong g_sram_used;

#define PAGE 4096ull

/* ---- registry (caller holds g_mem_lock) ------------------------------------------------- */
static int reg_add(emu_mem *m)
{
    if (g_n_mems == g_cap_mems) {
        size_t cap = g_cap_mems ? g_cap_mems * 2 : 64;
        emu_mem **n = realloc(g_mems, cap * sizeof *n);
        if (!n)
            return RKNN_ERR_MALLOC_FAIL;
        g_mems = n;
        g_cap_mems = cap;
    }
    g_mems[g_n_mems++] = m;
    return RKNN_SUCC;
}

static emu_mem *reg_find(const void *pub)
{
    for (size_t i = 0; i < g_n_mems; i++)
        if ((const void *)g_mems[i] == pub)
            return g_mems[i];
    return NULL;
}

static void reg_remove(emu_mem *m)
{
    for (size_t i = 0; i < g_n_mems; i++)
        if (g_mems[i] == m) {
            g_mems[i] = g_mems[--g_n_mems];
            return;
        }
}

static void buf_put_locked(emu_buf *b)
{
    if (--b->refs > 0)
        return;
    for (emu_buf **pp = &g_bufs; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            break;
        }
    if (b->cpu_base)
        munmap(b->cpu_base, (size_t)b->size);
    if (b->memfd >= 0)
        close(b->memfd);
    if (b->sram)
        atomic_fetch_sub(&g_sram_used, (long long)b->sram_bytes);
    free(b->dev_copy);
    free(b);
}

static void mem_free_locked(emu_mem *m)
{
    if (m->own_map)
        munmap(m->own_map, m->own_map_len);
    if (m->buf)
        buf_put_locked(m->buf);
    m->magic = 0;
    free(m);
}

emu_mem *emu_mem_get(rknn_tensor_mem *pub)
{
    if (!pub)
        return NULL;
    pthread_mutex_lock(&g_mem_lock);
    emu_mem *m = reg_find(pub);
    if (m)
        m->refs++;
    pthread_mutex_unlock(&g_mem_lock);
    return m;
}

emu_mem *emu_mem_ref(emu_mem *m)
{
    pthread_mutex_lock(&g_mem_lock);
    m->refs++;
    pthread_mutex_unlock(&g_mem_lock);
    return m;
}

void emu_mem_put(emu_mem *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&g_mem_lock);
    if (--m->refs == 0)
        mem_free_locked(m);
    pthread_mutex_unlock(&g_mem_lock);
}

int emu_mem_alive(emu_mem *m)
{
    pthread_mutex_lock(&g_mem_lock);
    int alive = m->registered;
    pthread_mutex_unlock(&g_mem_lock);
    return alive;
}

int emu_mem_coherent(const emu_mem *m) { return m->cpu == m->dev; }

void emu_mem_sync_range(emu_mem *m, uint64_t off, uint64_t len, int to_device)
{
    EMU_CTR_ADD(syncs, 1);
    if (emu_mem_coherent(m) || off >= m->size)
        return;
    if (len > m->size - off)
        len = m->size - off;
    if (to_device)
        memcpy(m->dev + off, m->cpu + off, (size_t)len);
    else
        memcpy(m->cpu + off, m->dev + off, (size_t)len);
    EMU_CTR_ADD(bytes_synced, len);
}

/* ---- allocation --------------------------------------------------------------------------- */
static emu_buf *buf_alloc(uint64_t size, int cacheable)
{
    emu_buf *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->memfd = -1;
    b->size = size;
    b->refs = 1;
    b->memfd = emu_memfd_create("rknn-emu-mem", MFD_CLOEXEC);
    if (b->memfd < 0 || ftruncate(b->memfd, (off_t)size) != 0)
        goto fail;
    void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, b->memfd, 0);
    if (p == MAP_FAILED)
        goto fail;
    b->cpu_base = p;
    struct stat st;
    if (fstat(b->memfd, &st) != 0)
        goto fail;
    b->dev = st.st_dev;
    b->ino = st.st_ino;
    if (cacheable) {
        b->dev_copy = dev_alloc(size);
        if (!b->dev_copy)
            goto fail;
        memset(b->dev_copy, 0, (size_t)size);
    }
    pthread_mutex_lock(&g_mem_lock);
    b->phys = g_next_phys;
    g_next_phys += (size + PAGE - 1) / PAGE * PAGE + PAGE;   /* plus a guard page */
    b->next = g_bufs;
    g_bufs = b;
    pthread_mutex_unlock(&g_mem_lock);
    return b;
fail:
    if (b->cpu_base)
        munmap(b->cpu_base, (size_t)size);
    if (b->memfd >= 0)
        close(b->memfd);
    free(b);
    return NULL;
}

static emu_mem *mem_new(emu_buf *b, uint64_t data_off, uint8_t *cpu, uint64_t size,
                        rknn_context owner, int no_ctx)
{
    emu_mem *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->magic = EMU_MEM_MAGIC;
    m->refs = 1;
    m->registered = 1;
    m->buf = b;
    m->cpu = cpu;
    if (b->dev_copy)
        m->dev = b->dev_copy + data_off;
    else if (b->cpu_base)
        m->dev = b->cpu_base + data_off;
    else
        m->dev = cpu;
    m->size = size;
    m->owner = owner;
    m->no_context = no_ctx;
    m->pub.fd = -1;
    m->pub.size = (uint32_t)size;
    return m;
}

/* Register m (holding the registry's reference); on failure frees it. */
static rknn_tensor_mem *publish(emu_mem *m)
{
    pthread_mutex_lock(&g_mem_lock);
    int rc = reg_add(m);
    if (rc != RKNN_SUCC) {
        mem_free_locked(m);
        m = NULL;
    }
    pthread_mutex_unlock(&g_mem_lock);
    if (!m)
        return NULL;
    EMU_CTR_ADD(live_mems, 1);
    EMU_CTR_ADD(mems_created, 1);
    return &m->pub;
}

emu_mem *emu_mem_alloc_internal(uint64_t size, int cacheable, rknn_context owner, int no_ctx,
                                int try_sram, const emu_platform *plat)
{
    if (size == 0 || size > UINT32_MAX)
        return NULL;
    emu_buf *b = buf_alloc(size, cacheable);
    if (!b)
        return NULL;
    if (try_sram && plat && plat->sram_size) {
        long long used = atomic_fetch_add(&g_sram_used, (long long)size);
        if (used + (long long)size <= (long long)plat->sram_size) {
            b->sram = 1;
            b->sram_bytes = (uint32_t)size;
        } else {
            atomic_fetch_sub(&g_sram_used, (long long)size);
        }
    }
    emu_mem *m = mem_new(b, 0, b->cpu_base, size, owner, no_ctx);
    if (!m) {
        pthread_mutex_lock(&g_mem_lock);
        buf_put_locked(b);
        pthread_mutex_unlock(&g_mem_lock);
        return NULL;
    }
    m->pub.virt_addr = b->cpu_base;
    m->pub.phys_addr = b->phys;
    m->pub.fd = b->memfd;
    m->pub.offset = 0;
    m->pub.flags = RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE;
    return m;
}

void emu_mem_free_internal(emu_mem *m) { emu_mem_put(m); }

uint32_t emu_sram_free(const emu_platform *p)
{
    long long used = atomic_load(&g_sram_used);
    return p->sram_size > used ? (uint32_t)(p->sram_size - used) : 0;
}

/* ---- exported: creation -------------------------------------------------------------------- */
static int ctx_ok_for(rknn_context ctx, const char *func, const emu_platform **plat)
{
    emu_ctx *c = emu_ctx_get(ctx);
    if (!c) {
        EMU_ERR(func, "invalid context 0x%llx", (unsigned long long)ctx);
        return 0;
    }
    *plat = c->plat;
    emu_ctx_put(c);
    if (!emu_platform_supports_func(*plat, func)) {
        emu_refuse_func(*plat, func);
        return 0;
    }
    return 1;
}

rknn_tensor_mem *rknn_create_mem(rknn_context ctx, uint32_t size)
{
    EMU_INJECT_PTR("rknn_create_mem");
    const emu_platform *p;
    if (!ctx_ok_for(ctx, "rknn_create_mem", &p))
        return NULL;
    if (size == 0) {
        EMU_ERR("rknn_create_mem", "invalid size: %u", size);
        return NULL;
    }
    if (emu_npu_memory_short(size)) {
        EMU_ERR(NULL, "failed to allocate handle, ret: -1, errno: 14");
        EMU_ERR(NULL, "failed to malloc npu memory, size: %u, flags: 0x2", size);
        return NULL;
    }
    emu_mem *m = emu_mem_alloc_internal(size, 1, ctx, 0, 0, p);
    if (!m) {
        EMU_ERR("rknn_create_mem", "cannot allocate %u bytes: %s", size, strerror(errno));
        return NULL;
    }
    return publish(m);
}

rknn_tensor_mem *rknn_create_mem2(rknn_context ctx, uint64_t size, uint64_t alloc_flags)
{
    EMU_INJECT_PTR("rknn_create_mem2");
    const emu_platform *p = NULL;
    int no_ctx = (alloc_flags & RKNN_MEM_FLAG_ALLOC_NO_CONTEXT) != 0;
    if (no_ctx) {
        p = emu_platform_current(NULL);
    } else if (!ctx_ok_for(ctx, "rknn_create_mem2", &p)) {
        return NULL;
    }
    uint64_t known = RKNN_FLAG_MEMORY_CACHEABLE | RKNN_FLAG_MEMORY_NON_CACHEABLE |
                     RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM | RKNN_MEM_FLAG_ALLOC_NO_CONTEXT;
    if (alloc_flags & ~known) {
        EMU_ERR("rknn_create_mem2", "unknown alloc flags 0x%llx", (unsigned long long)alloc_flags);
        return NULL;
    }
    if ((alloc_flags & RKNN_FLAG_MEMORY_CACHEABLE) && (alloc_flags & RKNN_FLAG_MEMORY_NON_CACHEABLE)) {
        EMU_ERR("rknn_create_mem2", "CACHEABLE and NON_CACHEABLE both set");
        return NULL;
    }
    if (size == 0 || size > UINT32_MAX) {
        EMU_ERR("rknn_create_mem2", "invalid size %llu", (unsigned long long)size);
        return NULL;
    }
    if (emu_npu_memory_short(size)) {
        EMU_ERR(NULL, "failed to allocate handle, ret: -1, errno: 14");
        EMU_ERR(NULL, "failed to malloc npu memory, size: %llu, flags: 0x%llx",
                (unsigned long long)size, (unsigned long long)alloc_flags);
        return NULL;
    }
    int cacheable = !(alloc_flags & RKNN_FLAG_MEMORY_NON_CACHEABLE);
    emu_mem *m = emu_mem_alloc_internal(size, cacheable, no_ctx ? 0 : ctx, no_ctx,
                                        (alloc_flags & RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM) != 0, p);
    if (!m) {
        EMU_ERR("rknn_create_mem2", "cannot allocate %llu bytes", (unsigned long long)size);
        return NULL;
    }
    return publish(m);
}

rknn_tensor_mem *rknn_create_mem_from_fd(rknn_context ctx, int32_t fd, void *virt_addr,
                                         uint32_t size, int32_t offset)
{
    static const char fn[] = "rknn_create_mem_from_fd";
    EMU_INJECT_PTR("rknn_create_mem_from_fd");
    const emu_platform *p;
    if (!ctx_ok_for(ctx, fn, &p))
        return NULL;
    if (fd < 0 || size == 0 || offset < 0) {
        EMU_ERR(fn, "invalid argument (fd %d, size %u, offset %d)", fd, size, offset);
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        EMU_ERR(fn, "fd %d: %s", fd, strerror(errno));
        return NULL;
    }
    uint64_t end = (uint64_t)offset + size;
    /* find the buf of this file, or make one for a foreign file */
    pthread_mutex_lock(&g_mem_lock);
    emu_buf *b = NULL;
    for (emu_buf *x = g_bufs; x; x = x->next)
        if (x->dev == st.st_dev && x->ino == st.st_ino) {
            b = x;
            b->refs++;
            break;
        }
    pthread_mutex_unlock(&g_mem_lock);
    if (!b) {
        if (st.st_size <= 0) {
            EMU_ERR(fn, "fd %d has no size (not a memfd, dma-buf or file?)", fd);
            return NULL;
        }
        b = calloc(1, sizeof *b);
        if (!b)
            return NULL;
        b->refs = 1;
        b->memfd = -1;
        b->dev = st.st_dev;
        b->ino = st.st_ino;
        b->size = (uint64_t)st.st_size;
        b->dev_copy = dev_alloc(b->size);
        void *tmp = mmap(NULL, (size_t)b->size, PROT_READ, MAP_SHARED, fd, 0);
        if (!b->dev_copy || tmp == MAP_FAILED) {
            EMU_ERR(fn, "fd %d cannot be mapped: %s", fd, strerror(errno));
            if (tmp != MAP_FAILED)
                munmap(tmp, (size_t)b->size);
            free(b->dev_copy);
            free(b);
            return NULL;
        }
        memcpy(b->dev_copy, tmp, (size_t)b->size);
        munmap(tmp, (size_t)b->size);
        pthread_mutex_lock(&g_mem_lock);
        b->next = g_bufs;
        g_bufs = b;
        pthread_mutex_unlock(&g_mem_lock);
    }
    if (end > b->size) {
        EMU_ERR(fn, "offset %d + size %u exceeds the %llu bytes of fd %d", offset, size,
                (unsigned long long)b->size, fd);
        goto fail;
    }
    void *own = NULL;
    if (!virt_addr) {
        own = mmap(NULL, (size_t)end, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (own == MAP_FAILED) {
            EMU_ERR(fn, "fd %d cannot be mapped: %s", fd, strerror(errno));
            goto fail;
        }
        virt_addr = own;
    }
    emu_mem *m = mem_new(b, (uint64_t)offset, (uint8_t *)virt_addr + offset, size, ctx, 0);
    if (!m) {
        if (own)
            munmap(own, (size_t)end);
        goto fail;
    }
    m->own_map = own;
    m->own_map_len = own ? (size_t)end : 0;
    m->pub.virt_addr = virt_addr;
    m->pub.phys_addr = b->phys;
    m->pub.fd = fd;
    m->pub.offset = offset;
    m->pub.flags = RKNN_TENSOR_MEMORY_FLAGS_FROM_FD;
    return publish(m);
fail:
    pthread_mutex_lock(&g_mem_lock);
    buf_put_locked(b);
    pthread_mutex_unlock(&g_mem_lock);
    return NULL;
}

rknn_tensor_mem *rknn_create_mem_from_phys(rknn_context ctx, uint64_t phys_addr, void *virt_addr,
                                           uint32_t size)
{
    static const char fn[] = "rknn_create_mem_from_phys";
    EMU_INJECT_PTR("rknn_create_mem_from_phys");
    const emu_platform *p;
    if (!ctx_ok_for(ctx, fn, &p))
        return NULL;
    if (size == 0) {
        EMU_ERR(fn, "size is 0");
        return NULL;
    }
    pthread_mutex_lock(&g_mem_lock);
    emu_buf *b = NULL;
    for (emu_buf *x = g_bufs; x; x = x->next)
        if (x->phys && phys_addr >= x->phys && phys_addr - x->phys <= x->size &&
            size <= x->size - (phys_addr - x->phys)) {
            b = x;
            b->refs++;
            break;
        }
    pthread_mutex_unlock(&g_mem_lock);
    if (!b) {
        EMU_ERR(fn, "physical range 0x%llx + %u was not allocated by this runtime",
                (unsigned long long)phys_addr, size);
        return NULL;
    }
    uint64_t off = phys_addr - b->phys;
    uint8_t *cpu = virt_addr ? (uint8_t *)virt_addr : b->cpu_base + off;
    emu_mem *m = mem_new(b, off, cpu, size, ctx, 0);
    if (!m) {
        pthread_mutex_lock(&g_mem_lock);
        buf_put_locked(b);
        pthread_mutex_unlock(&g_mem_lock);
        return NULL;
    }
    if (virt_addr && cpu != b->cpu_base + off && !b->dev_copy)
        m->dev = b->cpu_base + off;   /* foreign CPU view of coherent memory */
    m->pub.virt_addr = cpu;
    m->pub.phys_addr = phys_addr;
    m->pub.fd = -1;
    m->pub.offset = 0;
    m->pub.flags = RKNN_TENSOR_MEMORY_FLAGS_FROM_PHYS;
    return publish(m);
}

rknn_tensor_mem *rknn_create_mem_from_mb_blk(rknn_context ctx, void *mb_blk, int32_t offset)
{
    EMU_INJECT_PTR("rknn_create_mem_from_mb_blk");
    (void)ctx;
    (void)mb_blk;
    (void)offset;
    EMU_ERR("rknn_create_mem_from_mb_blk", "not supported on any platform (V2.5.0)");
    return NULL;
}

/* ---- exported: destroy / sync ------------------------------------------------------------- */
int rknn_destroy_mem(rknn_context ctx, rknn_tensor_mem *pub)
{
    static const char fn[] = "rknn_destroy_mem";
    EMU_INJECT_INT("rknn_destroy_mem");
    if (!pub) {
        EMU_ERR(fn, "mem is NULL");
        return RKNN_ERR_PARAM_INVALID;
    }
    pthread_mutex_lock(&g_mem_lock);
    emu_mem *m = reg_find(pub);
    int no_ctx = m ? m->no_context : 0;
    pthread_mutex_unlock(&g_mem_lock);
    if (!m) {
        EMU_ERR(fn, "unknown or already destroyed mem %p", (void *)pub);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (!no_ctx) {
        emu_ctx *c = emu_ctx_get(ctx);
        if (!c) {
            EMU_ERR(fn, "invalid context 0x%llx", (unsigned long long)ctx);
            return RKNN_ERR_CTX_INVALID;
        }
        emu_ctx_put(c);
    }
    pthread_mutex_lock(&g_mem_lock);
    m = reg_find(pub);   /* another thread may have destroyed it meanwhile */
    if (m) {
        reg_remove(m);
        m->registered = 0;
        if (--m->refs == 0)
            mem_free_locked(m);
    }
    pthread_mutex_unlock(&g_mem_lock);
    if (!m)
        return RKNN_ERR_PARAM_INVALID;
    EMU_CTR_ADD(live_mems, -1);
    return RKNN_SUCC;
}

int rknn_mem_sync(rknn_context ctx, rknn_tensor_mem *pub, rknn_mem_sync_mode mode)
{
    static const char fn[] = "rknn_mem_sync";
    EMU_INJECT_INT("rknn_mem_sync");
    emu_ctx *c = emu_ctx_get(ctx);
    if (!c) {
        EMU_ERR(fn, "invalid context 0x%llx", (unsigned long long)ctx);
        return RKNN_ERR_CTX_INVALID;
    }
    emu_ctx_put(c);
    if (mode < RKNN_MEMORY_SYNC_TO_DEVICE || mode > RKNN_MEMORY_SYNC_BIDIRECTIONAL) {
        EMU_ERR(fn, "invalid mode %d", (int)mode);
        return RKNN_ERR_PARAM_INVALID;
    }
    emu_mem *m = emu_mem_get(pub);
    if (!m) {
        EMU_ERR(fn, "unknown or destroyed mem %p", (void *)pub);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (mode & RKNN_MEMORY_SYNC_TO_DEVICE)
        emu_mem_sync_range(m, 0, m->size, 1);
    if (mode & RKNN_MEMORY_SYNC_FROM_DEVICE)
        emu_mem_sync_range(m, 0, m->size, 0);
    emu_mem_put(m);
    return RKNN_SUCC;
}

/* ---- exported: binding -------------------------------------------------------------------- */
/*
 * What rknn_set_weight_mem and rknn_set_internal_mem share: enter the context, look up the
 * mem, and check it is aligned and at least `need_of(model)` bytes (RKNN_QUERY_MEM_SIZE).
 * On success the context is entered and the mem referenced; the caller stores it and
 * leaves the context.
 */
static int take_model_mem(rknn_context ctx, rknn_tensor_mem *pub, const char *fn,
                          const char *what, uint64_t (*need_of)(const emu_model *),
                          emu_ctx **cp, emu_mem **mp)
{
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    emu_mem *m = emu_mem_get(pub);
    if (!m) {
        EMU_ERR(fn, "unknown or destroyed mem %p", (void *)pub);
        emu_ctx_leave(c);
        return RKNN_ERR_PARAM_INVALID;
    }
    uint64_t need = need_of(c->m);
    if ((uintptr_t)m->dev % EMU_DMA_ALIGN) {
        EMU_ERR(fn, "mem data (offset %d) is not %u-byte aligned", m->pub.offset, EMU_DMA_ALIGN);
        rc = RKNN_ERR_PARAM_INVALID;
    } else if (m->size < need) {
        EMU_ERR(fn, "mem of %llu bytes is smaller than the %s size %llu (RKNN_QUERY_MEM_SIZE)",
                (unsigned long long)m->size, what, (unsigned long long)need);
        rc = RKNN_ERR_PARAM_INVALID;
    }
    if (rc) {
        emu_mem_put(m);
        emu_ctx_leave(c);
        return rc;
    }
    *cp = c;
    *mp = m;
    return RKNN_SUCC;
}

int rknn_set_weight_mem(rknn_context ctx, rknn_tensor_mem *pub)
{
    EMU_INJECT_INT("rknn_set_weight_mem");
    emu_ctx *c;
    emu_mem *m;
    int rc = take_model_mem(ctx, pub, "rknn_set_weight_mem", "weight", emu_model_weight_size,
                            &c, &m);
    if (rc)
        return rc;
    /* the runtime loads the weights into the buffer: both views hold them afterwards */
    uint64_t need = emu_model_weight_size(c->m);
    if (need) {
        memcpy(m->dev, emu_model_weights(c->m), (size_t)need);
        if (!emu_mem_coherent(m))
            memcpy(m->cpu, emu_model_weights(c->m), (size_t)need);
    }
    emu_mem_put(c->weight_mem);
    c->weight_mem = m;
    emu_ctx_leave(c);
    return RKNN_SUCC;
}

int rknn_set_internal_mem(rknn_context ctx, rknn_tensor_mem *pub)
{
    EMU_INJECT_INT("rknn_set_internal_mem");
    emu_ctx *c;
    emu_mem *m;
    int rc = take_model_mem(ctx, pub, "rknn_set_internal_mem", "internal",
                            emu_model_internal_size, &c, &m);
    if (rc)
        return rc;
    emu_mem_put(c->internal_mem);
    c->internal_mem = m;
    emu_ctx_leave(c);
    return RKNN_SUCC;
}

int rknn_set_io_mem(rknn_context ctx, rknn_tensor_mem *pub, rknn_tensor_attr *attr)
{
    static const char fn[] = "rknn_set_io_mem";
    EMU_INJECT_INT("rknn_set_io_mem");
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    emu_mem *m = NULL;
    if (!attr) {
        EMU_ERR(fn, "attr is NULL");
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    if (c->flags & RKNN_FLAG_COLLECT_MODEL_INFO_ONLY) {
        EMU_ERR(fn, "context was created with RKNN_FLAG_COLLECT_MODEL_INFO_ONLY");
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    m = emu_mem_get(pub);
    if (!m) {
        EMU_ERR(fn, "unknown or destroyed mem %p", (void *)pub);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    /* which tensor: by name (as the demos pass the queried attr), else by index when the
       name is empty and the index is unambiguous */
    int is_out = -1;
    uint32_t idx = 0;
    char name[RKNN_MAX_NAME_LEN];
    memcpy(name, attr->name, sizeof name);
    name[sizeof name - 1] = '\0';
    if (name[0]) {
        for (uint32_t i = 0; i < c->n_in && is_out < 0; i++)
            if (strcmp(emu_model_input(c->m, i)->name, name) == 0) {
                is_out = 0;
                idx = i;
            }
        for (uint32_t o = 0; o < c->n_out && is_out < 0; o++)
            if (strcmp(emu_model_output(c->m, o)->name, name) == 0) {
                is_out = 1;
                idx = o;
            }
    } else if (attr->index < c->n_in && attr->index >= c->n_out) {
        is_out = 0;
        idx = attr->index;
    } else if (attr->index < c->n_out && attr->index >= c->n_in) {
        is_out = 1;
        idx = attr->index;
    }
    if (is_out < 0) {
        EMU_ERR(fn, "attr (index %u, name '%s') names no input or output of the model",
                attr->index, name);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    if ((rc = emu_ctx_check_flow(c, EMU_FLOW_ZERO_COPY, fn)))
        goto out;
    const emu_io_desc *d = is_out ? emu_model_output(c->m, idx) : emu_model_input(c->m, idx);
    if (!is_out && attr->pass_through && d->type == RKNN_TENSOR_FLOAT16 &&
        c->shared->answers->rules->fp16_needs_mem) {
        /* the mini runtime takes no float16 input as it is (fp16_net_rk2118, librknnmrt 2.3.2:
           -5 and this line); the input stays unbound, and rknn_run then fails */
        emu_log(EMU_LOG_E, NULL, "rknn_set_io_mem, input(%s) tensor type : FP16 not supported in "
                "pass_through == 1", d->name);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    if (!is_out && attr->pass_through && attr->type != d->type) {
        EMU_ERR(fn, "input %u: pass_through needs the model type %d, got %d", idx, (int)d->type,
                (int)attr->type);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    emu_layout l;
    rc = emu_ctx_layout_bound(c, is_out, idx, attr, &l);
    if (rc) {
        EMU_ERR(fn, "%s %u: unsupported type %d / fmt %d", is_out ? "output" : "input", idx,
                (int)attr->type, (int)attr->fmt);
        goto out;
    }
    uint64_t need = emu_layout_bytes(&l);
    if (m->size < need) {
        EMU_ERR(fn, "%s memory size(%llu) < model %s size(%llu)", is_out ? "output" : "input",
                (unsigned long long)m->size, is_out ? "output" : "input",
                (unsigned long long)need);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    emu_binding *b = is_out ? &c->out_bind[idx] : &c->in_bind[idx];
    emu_mem_put(b->mem);
    b->mem = m;
    b->attr = *attr;
    m = NULL;
    c->flow = EMU_FLOW_ZERO_COPY;
    rc = RKNN_SUCC;
out:
    emu_mem_put(m);
    emu_ctx_leave(c);
    return rc;
}

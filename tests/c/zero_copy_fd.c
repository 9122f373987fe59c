/*
 * The zero-copy flow with caller-owned memory from file descriptors, in the order of the
 * vendor's rknn_set_internal_mem_from_fd_demo and the dynamic-shape
 * zero_copy_alloc_outside demo (memfd standing in for an MMZ / dma-heap allocator):
 *   rknn_init(MEM_ALLOC_OUTSIDE | DISABLE_FLUSH_INPUT/OUTPUT_MEM_CACHE) -> query MEM_SIZE
 *   -> weight and internal buffers: memfd -> rknn_create_mem_from_fd -> set_weight_mem /
 *   set_internal_mem -> prologue queries -> one memfd for all I/O, each tensor at its own
 *   offset -> rknn_create_mem_from_fd(fd, virt, size, offset) -> rknn_set_io_mem -> write
 *   inputs -> rknn_mem_sync(TO_DEVICE) by hand -> rknn_run -> rknn_mem_sync(FROM_DEVICE) on
 *   outputs -> read -> rknn_destroy_mem -> rknn_destroy -> free the memfds.
 *
 * usage: zero_copy_fd MODEL OUT_PREFIX INPUT0 [INPUT1 ...]   (files as for general_flow)
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "demo_common.h"

typedef struct user_buf {
    int fd;
    unsigned char *virt;
    size_t size;
} user_buf;

static user_buf user_alloc(const char *name, size_t size)
{
    user_buf b;
    b.size = size ? size : 1;
    b.fd = memfd_create(name, MFD_CLOEXEC);
    if (b.fd < 0 || ftruncate(b.fd, (off_t)b.size) != 0) {
        perror("memfd");
        exit(2);
    }
    b.virt = mmap(NULL, b.size, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd, 0);
    if (b.virt == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return b;
}

static void user_free(user_buf *b)
{
    munmap(b->virt, b->size);
    close(b->fd);
}

static size_t page_align(size_t n) { return (n + 4095) / 4096 * 4096; }

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL OUT_PREFIX INPUT...\n", argv[0]);
        return 1;
    }
    size_t model_size;
    unsigned char *model = demo_read_file(argv[1], &model_size);
    rknn_context ctx = 0;
    uint32_t flags = RKNN_FLAG_MEM_ALLOC_OUTSIDE | RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE |
                     RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE;
    CHECK(rknn_init(&ctx, model, (uint32_t)model_size, flags, NULL));
    free(model);

    rknn_mem_size ms;
    CHECK(rknn_query(ctx, RKNN_QUERY_MEM_SIZE, &ms, sizeof ms));
    printf("weight %u, internal %u, dma %llu\n", ms.total_weight_size, ms.total_internal_size,
           (unsigned long long)ms.total_dma_allocated_size);
    user_buf wbuf = user_alloc("weights", ms.total_weight_size);
    user_buf ibuf = user_alloc("internal", ms.total_internal_size);
    rknn_tensor_mem *wmem = rknn_create_mem_from_fd(ctx, wbuf.fd, wbuf.virt, (uint32_t)wbuf.size, 0);
    rknn_tensor_mem *imem = rknn_create_mem_from_fd(ctx, ibuf.fd, NULL, (uint32_t)ibuf.size, 0);
    NONNULL(wmem);
    NONNULL(imem);
    CHECK(rknn_set_weight_mem(ctx, wmem));
    CHECK(rknn_set_internal_mem(ctx, imem));

    rknn_input_output_num io;
    rknn_tensor_attr *in_attrs, *out_attrs;
    demo_prologue(ctx, &io, &in_attrs, &out_attrs, RKNN_QUERY_OUTPUT_ATTR);
    if ((uint32_t)(argc - 3) != io.n_input)
        return 1;

    /* one buffer for every tensor: inputs then outputs, each at a page-aligned offset */
    uint32_t n_io = io.n_input + io.n_output;
    size_t *off = calloc(n_io + 1, sizeof *off);
    size_t *len = calloc(n_io, sizeof *len);
    NONNULL(off);
    NONNULL(len);
    for (uint32_t i = 0; i < n_io; i++) {
        rknn_tensor_attr *a = i < io.n_input ? &in_attrs[i] : &out_attrs[i - io.n_input];
        if (i < io.n_input && a->n_dims == 4)
            len[i] = a->size_with_stride;
        else
            len[i] = (size_t)a->n_elems * sizeof(float);
        off[i + 1] = off[i] + page_align(len[i]);
    }
    user_buf iobuf = user_alloc("io", off[n_io]);
    rknn_tensor_mem **mems = calloc(n_io, sizeof *mems);
    NONNULL(mems);
    for (uint32_t i = 0; i < n_io; i++) {
        mems[i] = rknn_create_mem_from_fd(ctx, iobuf.fd, iobuf.virt, (uint32_t)len[i], (int32_t)off[i]);
        NONNULL(mems[i]);
    }
    for (uint32_t i = 0; i < io.n_input; i++) {
        rknn_tensor_attr *a = &in_attrs[i];
        size_t n;
        unsigned char *src = demo_read_file(argv[3 + i], &n);
        unsigned char *dst = iobuf.virt + off[i];
        if (a->n_dims == 4) {
            a->type = RKNN_TENSOR_UINT8;
            a->fmt = RKNN_TENSOR_NHWC;
            uint32_t H = a->dims[1], W = a->dims[2], C = a->dims[3];
            uint32_t ws = a->w_stride ? a->w_stride : W;
            for (uint32_t h = 0; h < a->dims[0] * H; h++)
                memcpy(dst + (size_t)h * ws * C, src + (size_t)h * W * C, (size_t)W * C);
        } else {
            a->type = RKNN_TENSOR_FLOAT32;
            a->fmt = RKNN_TENSOR_UNDEFINED;
            memcpy(dst, src, len[i]);
        }
        free(src);
        CHECK(rknn_set_io_mem(ctx, mems[i], a));
    }
    for (uint32_t o = 0; o < io.n_output; o++) {
        out_attrs[o].type = RKNN_TENSOR_FLOAT32;
        out_attrs[o].fmt = RKNN_TENSOR_NCHW;
        CHECK(rknn_set_io_mem(ctx, mems[io.n_input + o], &out_attrs[o]));
    }
    /* the runtime flushes nothing in this mode: clean the inputs, run, invalidate outputs */
    for (uint32_t i = 0; i < io.n_input; i++)
        CHECK(rknn_mem_sync(ctx, mems[i], RKNN_MEMORY_SYNC_TO_DEVICE));
    CHECK(rknn_run(ctx, NULL));
    for (uint32_t o = 0; o < io.n_output; o++) {
        CHECK(rknn_mem_sync(ctx, mems[io.n_input + o], RKNN_MEMORY_SYNC_FROM_DEVICE));
        demo_write_file(argv[2], o, iobuf.virt + off[io.n_input + o], len[io.n_input + o]);
    }

    for (uint32_t i = 0; i < n_io; i++)
        CHECK(rknn_destroy_mem(ctx, mems[i]));
    CHECK(rknn_destroy_mem(ctx, wmem));
    CHECK(rknn_destroy_mem(ctx, imem));
    CHECK(rknn_destroy(ctx));
    user_free(&iobuf);
    user_free(&wbuf);
    user_free(&ibuf);
    free(mems);
    free(off);
    free(len);
    free(in_attrs);
    free(out_attrs);
    return demo_leak_check();
}

"""The matmul fallback's CPU form in the kernel language, planned and launched
by module/lib/mod_matmul.c on devices whose compiler makes vectors of
neighbouring work-items (Intel's CPU runtime); other devices take its tiled
kernel.

A work-group is 16 work-items along a row of c, which the device runs as the
lanes of one vector; each work-item computes ROWS rows of its column, so per
k step the group loads one run of b's row (a vector), reads ROWS elements of
a that every lane shares, and does ROWS vector multiply-adds. The tiled
kernel's barriers and local copies run one work-item at a time there
(1024^2 float32: 99 ms against OpenBLAS's 9; this form 18-22 ms). matmul_cpu
covers c's whole blocks; matmul_cpu_edge, an element per work-item, the rows
and columns past them (branches or clamped indices for edges in the one
kernel cost the vector form half its speed). ACC: the accumulator's dtype
(int32 / uint32 for 8- and 16-bit results, whose products wrap alike).
"""
import offload as ol


@ol.kernel
def matmul_cpu(item, a, b, c, ACC: ol.constexpr, ROWS: ol.constexpr):
    j = item.get_global_id(1)
    i0 = item.get_global_id(0) * ROWS
    K = a.shape[1]
    acc = ol.private_array(ROWS, ACC)  # unrolled indices: registers
    for r in ol.static_range(ROWS):
        acc[r] = ACC(0)
    for k in range(K):
        bk = b[k, j]
        for r in ol.static_range(ROWS):
            acc[r] += a[i0 + r, k] * bk
    for r in ol.static_range(ROWS):
        c[i0 + r, j] = acc[r]


@ol.kernel
def matmul_cpu_edge(item, a, b, c, i0, j0, ACC: ol.constexpr):
    """c's elements from (i0, j0) on, one per work-item."""
    i = i0 + item.get_id(0)
    j = j0 + item.get_id(1)
    s = ACC(0)
    for k in range(a.shape[1]):
        s += a[i, k] * b[k, j]
    c[i, j] = s

# Sourced by the side-by-side benchmark scripts: the environment both sides run in, and a refusal
# to run when PyTorch is not on an optimised BLAS. Expects PY (the Python that has PyTorch).
#
# No forced OpenBLAS core type / L2 size (this machine's environment sets them for tests; they
# slow a current OpenBLAS), and large allocations stay mapped between steps instead of being
# unmapped and re-faulted every step.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export MALLOC_MMAP_THRESHOLD_=1073741824
export MALLOC_TRIM_THRESHOLD_=4294967296

# Debian's PyTorch calls whichever libblas.so.3 the alternatives system selects; the reference
# BLAS (Debian's blas/libblas.so.3) runs its GEMMs about 20x slower, which would inflate every
# ratio, even with OpenBLAS installed beside it for LAPACK.
BLAS="$("$PY" -c "import torch; torch.mm(torch.ones(64, 64), torch.ones(64, 64))
print(' '.join(sorted({l.split()[-1] for l in open('/proc/self/maps') if 'blas' in l or 'mkl' in l})))")"
if [[ "$BLAS" == */blas/libblas.so* || ( "$BLAS" != *openblas* && "$BLAS" != *mkl* ) ]]; then
    echo "refusing to run: PyTorch's GEMMs use an unoptimised BLAS (loaded: ${BLAS:-none}); install" \
         "libopenblas0-pthread (scripts/install-deps.sh --bench does) and select it as libblas.so.3" >&2
    exit 1
fi
echo "PyTorch's BLAS: $BLAS" >&2

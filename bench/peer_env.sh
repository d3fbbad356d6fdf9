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

# Runs one model on both sides with the same arguments ("$@": the model's size and --steps, which
# both programs take with the same defaults): PyTorch with 1 and with 2 threads (the faster
# counts: its fastest configuration here), then Tandem on both cores. Sets torch1, torch2 and
# tandem to their JSON lines and prints the load before and after.
run_both() {
    local torch_script="$1" tandem_bin="$2"
    shift 2
    echo "load before the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    torch1=$("$PY" "$torch_script" "$@" --threads 1 --json)
    torch2=$("$PY" "$torch_script" "$@" --threads 2 --json)
    tandem=$("$tandem_bin" "$@" --json)
    echo "load after the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
}
